package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// What `tailor sandbox --apply examples/ --until-settled --report json` does: the examples settle
// with every pod Running, and the report prices and describes the fleet.
func TestExamplesSettleWithEveryPodRunning(t *testing.T) {
	e := newEnv(t)
	if err := sandbox.ApplyFiles(e.ctx, e.cluster.Config, []string{"../../examples"}, nil); err != nil {
		t.Fatal(err)
	}
	var state *sandbox.State
	e.waitFor("the examples to settle", 2*time.Minute, func() (bool, string) {
		s, err := e.cluster.Read(e.ctx)
		if err != nil {
			return false, err.Error()
		}
		state = s
		return s.Settled() && len(s.Pods) > 0, "not settled"
	})
	pools, err := e.cluster.Tailor.KarpenterV1().NodePools().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	report := state.Report(e.ctx, e.cluster.Cloud, pools.Items)
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
	e := newEnv(t)
	if err := sandbox.ApplyFiles(e.ctx, e.cluster.Config, []string{"../../examples"}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitRunning("app=inflate", 5, 2*time.Minute)
	before, nodes := e.fleetPrice("default")
	d, err := e.cluster.Kube.AppsV1().Deployments("default").Get(e.ctx, "inflate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.scale(d, 1)
	e.waitRunning("app=inflate", 1, time.Minute)
	// The example NodePool's consolidateAfter is 1m.
	e.clock.Step(time.Minute)
	e.waitFor("the fleet to shrink", 2*time.Minute, func() (bool, string) {
		price, n := e.fleetPrice("default")
		busy, _ := e.disrupting("default")
		return price < before && busy == 0 && e.readyPods("app=inflate") == 1,
			fmt.Sprintf("%d nodes at $%.4f/h (was %d at $%.4f/h), %d disrupting", n, price, nodes, before, busy)
	})
	evs := e.eventsFor("DisruptionTerminating", "NodeClaim")
	if !slices.ContainsFunc(evs, func(ev eventsv1.Event) bool { return strings.Contains(ev.Note, "saves $") }) {
		t.Fatalf("no DisruptionTerminating Event with the saving: %v", notes(evs))
	}
	after, _ := e.fleetPrice("default")
	t.Logf("inflate 5 -> 1: $%.4f/h -> $%.4f/h; %v", before, after, notes(evs))
}
