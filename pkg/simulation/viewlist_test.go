package simulation

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestViewListsShareTheSnapshots checks the lists a simulator shows PreFilter for views of one
// Snapshot and planned nodes: each is the Snapshot's nodes and then the planned ones, a list once
// handed out never changes afterwards, whatever views follow (growing by one claim, with empty
// domains after the claims, starting over with other claims, with none), and a view that adds a
// claim to the last one shares its list instead of copying the Snapshot's nodes.
func TestViewListsShareTheSnapshots(t *testing.T) {
	sim := offline(t, defaultProfile(t))
	var nodes []*corev1.Node
	for i := range 50 {
		nodes = append(nodes, snapNode(fmt.Sprintf("node-%02d", i)))
	}
	snapshot, err := NewSnapshot(nil, nodes)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := snapshot.NodeInfos().List()
	newNode := func(name string) fwk.NodeInfo {
		ni := framework.NewNodeInfo()
		ni.SetNode(snapNode(name))
		return ni
	}
	domains := []fwk.NodeInfo{newNode("domain-a"), newNode("domain-b")}
	type shown struct {
		list, want []fwk.NodeInfo
	}
	var all []shown
	rng := rand.New(rand.NewSource(35))
	var claims []fwk.NodeInfo
	shared := 0
	for step := range 400 {
		planned := claims
		switch r := rng.Intn(10); {
		case r < 5:
			claims = append(claims, newNode(fmt.Sprintf("claim-%d", step)))
			planned = claims
		case r < 7:
			planned = append(slices.Clone(claims), domains...)
		case r < 8:
			claims = []fwk.NodeInfo{newNode(fmt.Sprintf("claim-%d", step))}
			planned = claims
		case r < 9:
			planned = nil
		}
		sim.Use(snapshot, planned...)
		list, err := sim.snapshot.NodeInfos().List()
		if err != nil {
			t.Fatal(err)
		}
		want := append(slices.Clone(base), planned...)
		if len(all) > 0 && len(planned) > 0 && len(list) > 0 && len(all[len(all)-1].list) > len(base) && &list[0] == &all[len(all)-1].list[0] {
			shared++
		}
		all = append(all, shown{list: list, want: want})
		for i, s := range all {
			if !slices.Equal(s.list, s.want) {
				t.Fatalf("step %d: the list shown at step %d changed: %d nodes, want %d", step, i, len(s.list), len(s.want))
			}
		}
	}
	if shared == 0 {
		t.Fatalf("no view shared the list of the one before: every claim copied the Snapshot's nodes")
	}
	t.Logf("400 views, %d shared the list before theirs", shared)
}

// TestViewListsAfterTheirFork checks when the list of a closed fork is reused: a list handed out
// in a fork that is still open never changes, whatever inner forks open, show other claims and
// close; once the fork a list was handed out in is closed, the next plan's lists are written in
// the same memory instead of copying the Snapshot's nodes again.
func TestViewListsAfterTheirFork(t *testing.T) {
	sim := offline(t, defaultProfile(t))
	var nodes []*corev1.Node
	for i := range 20 {
		nodes = append(nodes, snapNode(fmt.Sprintf("node-%02d", i)))
	}
	snapshot, err := NewSnapshot(nil, nodes)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := snapshot.NodeInfos().List()
	claim := func(name string) fwk.NodeInfo {
		ni := framework.NewNodeInfo()
		ni.SetNode(snapNode(name))
		return ni
	}
	show := func(planned ...fwk.NodeInfo) []fwk.NodeInfo {
		t.Helper()
		sim.Use(snapshot, planned...)
		list, err := sim.snapshot.NodeInfos().List()
		if err != nil {
			t.Fatal(err)
		}
		if want := append(slices.Clone(base), planned...); !slices.Equal(list, want) {
			t.Fatalf("shown %d nodes, want the Snapshot's %d and %d planned", len(list), len(base), len(planned))
		}
		return list
	}

	// A probe's fork, and a plan's inside it.
	snapshot.Fork()
	probe := show(claim("probe-0"))
	probeWas := slices.Clone(probe)
	snapshot.Fork()
	plan := show(claim("plan-1-a"))
	snapshot.Revert()
	// The plan's fork is closed, the probe's is open: the next plan writes where the last one
	// did, and the probe's list stays as it was.
	snapshot.Fork()
	next := show(claim("plan-2-a"), claim("plan-2-b"))
	if &next[0] != &plan[0] {
		t.Fatalf("the plan after the last one closed its fork copied the Snapshot's nodes again")
	}
	if !slices.Equal(probe, probeWas) {
		t.Fatalf("the list handed out in the probe's open fork changed when a plan inside it reused memory")
	}
	// Growing inside the open fork shares the list.
	grown := show(next[len(base)], next[len(base)+1], claim("plan-2-c"))
	if &grown[0] != &next[0] {
		t.Fatalf("a view adding a claim to the last one copied the Snapshot's nodes")
	}
	snapshot.Revert()
	snapshot.Revert()
	if !slices.Equal(probe, probeWas) {
		t.Fatalf("the probe's list changed before its fork closed")
	}
}
