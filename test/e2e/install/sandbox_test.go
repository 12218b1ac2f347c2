package install

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// What `tailor sandbox --apply examples/ --until-settled --report json` does: the examples settle
// with every pod Running, and the report prices and describes the fleet.
func TestExamplesSettleWithEveryPodRunning(t *testing.T) {
	e := env.New(t)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{env.RepoPath("examples")}, nil); err != nil {
		t.Fatal(err)
	}
	var state *sandbox.State
	e.WaitFor("the examples to settle", 2*time.Minute, func() (bool, string) {
		s, err := e.Cluster.Read(e.Ctx)
		if err != nil {
			return false, err.Error()
		}
		state = s
		return s.Settled() && len(s.Pods) > 0, "not settled"
	})
	pools, err := e.Cluster.Tailor.KarpenterV1().NodePools().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	report := state.Report(e.Ctx, e.Cluster.Cloud, pools.Items)
	if !report.Settled {
		t.Fatal("report says not settled")
	}
	if len(report.Pods) == 0 || len(report.Nodes) == 0 {
		t.Fatalf("report has %d pods on %d nodes", len(report.Pods), len(report.Nodes))
	}
	placed := 0
	for _, p := range report.Pods {
		if p.Phase != string(corev1.PodRunning) || p.Node == "" {
			t.Errorf("pod %s is %s on %q (%s)", p.Name, p.Phase, p.Node, p.Reason)
		}
	}
	var sum float64
	for _, n := range report.Nodes {
		if n.NodePool != "default" || n.InstanceType == "" || n.Zone == "" || n.CapacityType == "" || n.PricePerHour <= 0 {
			t.Errorf("node %s is not fully described: %+v", n.Name, n)
		}
		if len(n.Allocatable) == 0 || n.Labels["karpenter.k8s.aws/instance-family"] == "" {
			t.Errorf("node %s lacks allocatable or instance labels", n.Name)
		}
		placed += len(n.Pods)
		sum += n.PricePerHour
	}
	if placed != len(report.Pods) {
		t.Errorf("nodes list %d pods, the cluster has %d", placed, len(report.Pods))
	}
	if report.PricePerHour != sum {
		t.Errorf("total price %v is not the sum of the nodes' %v", report.PricePerHour, sum)
	}
}

// What the README promises of `make run`: scaling inflate down shrinks the fleet, with a
// DisruptionTerminating Event that says what was decided and what it saves.
func TestScalingTheExampleDownShrinksTheFleet(t *testing.T) {
	e := env.New(t)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{env.RepoPath("examples")}, nil); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=inflate", 5, 2*time.Minute)
	before, nodes := e.FleetPrice("default")
	d, err := e.Cluster.Kube.AppsV1().Deployments("default").Get(e.Ctx, "inflate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.Scale(d, 1)
	e.WaitRunning("app=inflate", 1, time.Minute)
	// The example NodePool's consolidateAfter is 1m.
	e.Clock.Step(time.Minute)
	e.WaitFor("the fleet to shrink", 2*time.Minute, func() (bool, string) {
		price, n := e.FleetPrice("default")
		busy, _ := e.Disrupting("default")
		return price < before && busy == 0 && e.ReadyPods("app=inflate") == 1,
			fmt.Sprintf("%d nodes at $%.4f/h (was %d at $%.4f/h), %d disrupting", n, price, nodes, before, busy)
	})
	evs := e.EventsFor("DisruptionTerminating", "NodeClaim")
	if !slices.ContainsFunc(evs, func(ev eventsv1.Event) bool { return strings.Contains(ev.Note, "saves $") }) {
		t.Fatalf("no DisruptionTerminating Event with the saving: %v", env.Notes(evs))
	}
	after, _ := e.FleetPrice("default")
	t.Logf("inflate 5 -> 1: $%.4f/h -> $%.4f/h; %v", before, after, env.Notes(evs))
}

// What `tailor sandbox --apply` does with kinds discovery does not know yet: a CRD and an object of
// its kind in one apply both land, however late the new kind reaches discovery; a misspelt kind is
// refused with the kind and the object named.
func TestApplyWaitsForANewKindAndNamesAMisspeltOne(t *testing.T) {
	e := env.New(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	crd := write("1-crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: fittings.tests.tailor.sh}
spec:
  group: tests.tailor.sh
  scope: Namespaced
  names: {kind: Fitting, plural: fittings, singular: fitting, listKind: FittingList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)
	fitting := write("2-fitting.yaml", `apiVersion: tests.tailor.sh/v1
kind: Fitting
metadata: {name: first, namespace: default}
spec: {sleeves: long}
`)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{crd, fitting}, nil); err != nil {
		t.Fatalf("a CRD and an object of its kind in one apply: %v", err)
	}
	typo := write("pool.yaml", `apiVersion: karpenter.sh/v1
kind: NodePol
metadata: {name: misspelt}
spec: {}
`)
	err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{typo}, nil)
	if err == nil || !strings.Contains(err.Error(), "NodePol misspelt") || !meta.IsNoMatchError(err) {
		t.Fatalf("a misspelt kind: got %v, want a no-match error naming NodePol misspelt", err)
	}
}
