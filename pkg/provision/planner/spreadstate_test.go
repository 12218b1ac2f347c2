package planner

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/prefilter"
)

// TestSpreadStateIsReadByReflection: PodTopologySpread's state is reached by reflection (see
// spreadstate.go). A scheduler version that changed its shape would silently send every spreading
// pod back to a fresh PreFilter; this test fails instead. It also checks that findMinima finds the
// emptiest domain that increments left stale.
func TestSpreadStateIsReadByReflection(t *testing.T) {
	testPlanner(t) // builds sim
	zones := spread("web", corev1.LabelTopologyZone, 1, corev1.DoNotSchedule)
	nodes := []*corev1.Node{zonedNode("a1", fake.ZoneA, "4", "8Gi"), zonedNode("b1", fake.ZoneB, "4", "8Gi"), zonedNode("c1", fake.ZoneC, "4", "8Gi")}
	running := newPod("running", "100m", "100Mi", labelled("web"))
	running.Spec.NodeName = "c1"
	sim.Use(schedcache.NewSnapshot([]*corev1.Pod{running}, nodes))
	pod := newPod("next", "100m", "100Mi", labelled("web"), zones)
	state, _, status := sim.PreFilter(context.Background(), pod)
	if status != nil {
		t.Fatal(status.Message())
	}
	s, ok := prefilter.SpreadStateOf(state)
	if !ok {
		t.Fatal("PodTopologySpread's PreFilter state is not the shape spreadstate.go reads")
	}
	if len(s.Keys) != 1 || s.Keys[0] != corev1.LabelTopologyZone || s.Counts[0][fake.ZoneC] != 1 || len(s.Counts[0]) != 3 {
		t.Fatalf("read keys %v and counts %v, want zone counts a:0 b:0 c:1", s.Keys, s.Counts)
	}
	// Pods join zones a and b, twice each. The plugin's two critical paths follow a and b only,
	// so they end at 2 while zone c, with 1, is the emptiest: zone a (2 pods) still passes with
	// maxSkew 1. findMinima finds c again.
	ni := func(name string) fwk.NodeInfo {
		for _, n := range nodes {
			if n.Name == name {
				info := framework.NewNodeInfo()
				info.SetNode(n)
				return info
			}
		}
		t.Fatalf("no node %s", name)
		return nil
	}
	for i, node := range []string{"a1", "b1", "a1", "b1"} {
		added, err := framework.NewPodInfo(newPod(fmt.Sprintf("added-%d", i), "100m", "100Mi", labelled("web")))
		if err != nil {
			t.Fatal(err)
		}
		if status := sim.AddPod(context.Background(), state, pod, added, ni(node)); !status.IsSuccess() {
			t.Fatal(status.Message())
		}
	}
	if !sim.Filter(context.Background(), state, pod, ni("a1")).IsSuccess() {
		t.Fatal("zone a is refused before the mend: the plugin's minimum is not stale as the test assumes")
	}
	s.FindMinima()
	if sim.Filter(context.Background(), state, pod, ni("a1")).IsSuccess() {
		t.Fatal("after findMinima, zone a (2 pods against c's 1) still passes with maxSkew 1")
	}
	if status := sim.Filter(context.Background(), state, pod, ni("c1")); !status.IsSuccess() {
		t.Fatalf("after findMinima, zone c, the emptiest, is refused: %s", status.Message())
	}
}

// TestFindMinimaKeepsPathsThatCountNoPod: a mend whose critical paths are two domains still
// empty keeps them (nothing counts fewer) and one whose paths took pods finds the emptiest again:
// a spread over empty zones refuses a second pod in a zone while another is empty, and takes it
// once every zone has one.
func TestFindMinimaKeepsPathsThatCountNoPod(t *testing.T) {
	testPlanner(t) // builds sim
	nodes := []*corev1.Node{zonedNode("a1", fake.ZoneA, "4", "8Gi"), zonedNode("b1", fake.ZoneB, "4", "8Gi"), zonedNode("c1", fake.ZoneC, "4", "8Gi")}
	sim.Use(schedcache.NewSnapshot(nil, nodes))
	pod := newPod("next", "100m", "100Mi", labelled("web"), spread("web", corev1.LabelTopologyZone, 1, corev1.DoNotSchedule))
	state, _, status := sim.PreFilter(context.Background(), pod)
	if status != nil {
		t.Fatal(status.Message())
	}
	s, ok := prefilter.SpreadStateOf(state)
	if !ok {
		t.Fatal("PodTopologySpread's PreFilter state is not the shape spreadstate.go reads")
	}
	infos := map[string]fwk.NodeInfo{}
	for _, n := range nodes {
		infos[n.Name] = framework.NewNodeInfo()
		infos[n.Name].SetNode(n)
	}
	passes := func(node string) bool {
		return sim.Filter(context.Background(), state, pod, infos[node]).IsSuccess()
	}
	for i, node := range []string{"a1", "b1", "c1"} {
		added, err := framework.NewPodInfo(newPod(fmt.Sprintf("added-%d", i), "100m", "100Mi", labelled("web")))
		if err != nil {
			t.Fatal(err)
		}
		if status := sim.AddPod(context.Background(), state, pod, added, infos[node]); !status.IsSuccess() {
			t.Fatal(status.Message())
		}
		s.FindMinima()
		if i < 2 && (passes(node) || !passes("c1")) {
			t.Fatalf("after a pod in %s: %s passes %v, the empty zone c passes %v; want refused and passes", node, node, passes(node), passes("c1"))
		}
	}
	for _, node := range []string{"a1", "b1", "c1"} {
		if !passes(node) {
			t.Fatalf("every zone holds one pod, and %s refuses the next: the minimum is stale", node)
		}
	}
}
