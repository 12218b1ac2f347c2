package provisioning

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// The values NodePools can create are domains of a spread before any node carries them, and a
// NodePool's template labels hold its nodes as requirements do: the manifests of
// testdata/domains, each a behaviour of Karpenter's topology, run as Karpenter runs them.

// domainsEnv starts a cluster with the objects of testdata/domains/file.
func domainsEnv(t *testing.T, file string) *env.Env {
	t.Helper()
	e := env.New(t)
	path := filepath.Join("testdata", "domains", file)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{path}, nil); err != nil {
		t.Fatalf("applying %s: %v", path, err)
	}
	return e
}

// podsPer counts the Running pods that match selector per value of the label key of their node,
// and returns the nodes by name, once want of them run and every NodeClaim has initialized.
func podsPer(e *env.Env, selector, key string, want int) (map[string]int, map[string]corev1.Node) {
	e.T.Helper()
	pods := e.WaitRunning(selector, want, 3*time.Minute)
	e.WaitFor("every NodeClaim initialized", time.Minute, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range claims.Items {
			if !c.IsTrue(karpv1.ConditionTypeInitialized) {
				return false, fmt.Sprintf("NodeClaim %s not initialized", c.Name)
			}
		}
		return true, ""
	})
	list, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	nodes := map[string]corev1.Node{}
	for _, n := range list.Items {
		nodes[n.Name] = n
	}
	counts := map[string]int{}
	for _, p := range pods {
		n, ok := nodes[p.Spec.NodeName]
		if !ok {
			e.T.Fatalf("pod %s runs on %q, which is not a node", p.Name, p.Spec.NodeName)
		}
		counts[n.Labels[key]]++
	}
	return counts, nodes
}

// TestSpotToOnDemandRatioOverACustomKey: Karpenter's spot to on-demand ratio recipe. The five
// values of capacity-spread are domains although no node carries one yet: four replicas run in
// each, those in 2 to 5 on spot nodes of the spot pool, those in 1 on an on-demand node.
func TestSpotToOnDemandRatioOverACustomKey(t *testing.T) {
	e := domainsEnv(t, "capacity-spread.yaml")
	counts, nodes := podsPer(e, "app=ratio", "capacity-spread", 20)
	want := map[string]int{"1": 4, "2": 4, "3": 4, "4": 4, "5": 4}
	if !maps.Equal(counts, want) {
		t.Fatalf("replicas per capacity-spread value: %v, want %v", counts, want)
	}
	for _, n := range nodes {
		pool, value, ct := n.Labels[karpv1.NodePoolLabelKey], n.Labels["capacity-spread"], n.Labels[karpv1.CapacityTypeLabelKey]
		wantPool, wantCT := "spot", karpv1.CapacityTypeSpot
		if value == "1" {
			wantPool, wantCT = "on-demand", karpv1.CapacityTypeOnDemand
		}
		if pool != wantPool || ct != wantCT {
			t.Errorf("node %s (capacity-spread=%s) is %s from NodePool %s, want %s from %s", n.Name, value, ct, pool, wantCT, wantPool)
		}
	}
}

// TestTaintedPoolsShareACustomDomain: Karpenter's "mutually exclusive NodePools (by taints) share
// domains" with nodeTaintsPolicy: Honor. Each replica counts the nodes it tolerates: 3, 2 and 1
// replicas run in the three values of fake-label.
func TestTaintedPoolsShareACustomDomain(t *testing.T) {
	e := domainsEnv(t, "shared-tainted.yaml")
	counts, _ := podsPer(e, "app=shared", "fake-label", 6)
	if got := slices.Sorted(maps.Values(counts)); len(counts) != 3 || !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("replicas per fake-label value: %v, want 3, 2 and 1 over foo, bar and baz", counts)
	}
	// Each Deployment's own replicas: those that tolerate the first pool in foo and bar, one
	// each; the others in foo and baz, two each.
	for _, d := range []struct {
		selector string
		n        int
		want     map[string]int
	}{
		{"tolerates=first", 2, map[string]int{"foo": 1, "bar": 1}},
		{"tolerates=second", 4, map[string]int{"foo": 2, "baz": 2}},
	} {
		if got, _ := podsPer(e, "app=shared,"+d.selector, "fake-label", d.n); !maps.Equal(got, d.want) {
			t.Errorf("%s: replicas per fake-label value %v, want %v", d.selector, got, d.want)
		}
	}
}

// TestZoneTemplateLabelHoldsTheNodePool: a NodePool whose template labels set the zone launches
// in that zone only, as Karpenter does with template labels turned into requirements, and its
// NodeClaims say so.
func TestZoneTemplateLabelHoldsTheNodePool(t *testing.T) {
	e := domainsEnv(t, "zone-label.yaml")
	counts, _ := podsPer(e, "app=zoned", corev1.LabelTopologyZone, 6)
	if len(counts) != 1 || counts[fake.ZoneB] != 6 {
		t.Fatalf("replicas per zone: %v, want all 6 in %s", counts, fake.ZoneB)
	}
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		for _, r := range c.Spec.Requirements {
			if r.Key == corev1.LabelTopologyZone && (r.Operator != corev1.NodeSelectorOpIn || !slices.Equal(r.Values, []string{fake.ZoneB})) {
				t.Errorf("NodeClaim %s requires %s %s %v, want In [%s]", c.Name, r.Key, r.Operator, r.Values, fake.ZoneB)
			}
		}
	}
}

// TestConflictingTemplateLabelIsRefused: a NodePool whose template label its own requirements
// refuse is refused by the API server, which names the field.
func TestConflictingTemplateLabelIsRefused(t *testing.T) {
	e := env.New(t)
	path := filepath.Join("testdata", "domains", "conflicting-label.yaml")
	err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{path}, nil)
	if err == nil {
		t.Fatal("the API server admitted a NodePool whose template label its requirements refuse")
	}
	t.Logf("refused: %v", err)
	for _, want := range []string{"spec.template.metadata.labels", "spec.template.spec.requirements"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %s", err, want)
		}
	}
	if _, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "conflicting", metav1.GetOptions{}); err == nil {
		t.Error("NodePool conflicting exists")
	}
}
