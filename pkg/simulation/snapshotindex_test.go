package simulation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// TestSnapshotIndexesMatchAWalk changes a snapshot of 37 nodes at random (pods added, nodes
// replaced, inside nested forks that are reverted or committed) and, after every change, requires
// NextWithRoom and the lists of nodes with affinity pods to answer exactly as a walk over the
// nodes as they are now: NextWithRoom the first node at or after a position that NoRoom does not
// rule out, for requests of every size; the lists the same nodes in the same order.
func TestSnapshotIndexesMatchAWalk(t *testing.T) {
	sim := offline(t, defaultProfile(t))
	rng := rand.New(rand.NewPCG(35, 5))
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range 37 {
		name := fmt.Sprintf("n-%02d", i)
		nodes = append(nodes, snapNode(name))
		for k := range rng.IntN(5) {
			pods = append(pods, snapPod(fmt.Sprintf("p-%02d-%d", i, k), name, "", rng.IntN(4) == 0))
		}
	}
	s, err := NewSnapshot(pods, nodes)
	if err != nil {
		t.Fatal(err)
	}
	asks := []Requests{{}, {MilliCPU: 500}, {MilliCPU: 1000}, {MilliCPU: 2500}, {MilliCPU: 4000}, {Memory: 8 << 30}, {MilliCPU: 1000, Memory: 20 << 30}}
	check := func(step string) {
		t.Helper()
		list, _ := s.NodeInfos().List()
		for _, r := range asks {
			for from := range len(list) + 1 {
				want := from
				for want < len(list) && sim.NoRoom(r, list[want]) {
					want++
				}
				if got := s.NextWithRoom(r, from); got != want {
					t.Fatalf("%s: NextWithRoom(%+v, %d) = %d, a walk says %d", step, r, from, got, want)
				}
			}
		}
		for _, l := range []struct {
			name string
			keep func(fwk.NodeInfo) bool
			got  func() ([]fwk.NodeInfo, error)
		}{
			{"affinity", hasAffinity, s.NodeInfos().HavePodsWithAffinityList},
			{"required anti-affinity", hasRequiredAntiAffinity, s.NodeInfos().HavePodsWithRequiredAntiAffinityList},
		} {
			got, _ := l.got()
			if want := slices.DeleteFunc(slices.Clone(list), func(ni fwk.NodeInfo) bool { return !l.keep(ni) }); !slices.Equal(got, want) {
				t.Fatalf("%s: nodes with %s pods: %d listed, a walk finds %d", step, l.name, len(got), len(want))
			}
		}
	}
	check("built")
	depth, added := 0, 0
	for step := range 400 {
		list, _ := s.NodeInfos().List()
		ni := list[rng.IntN(len(list))]
		var what string
		switch op := rng.IntN(10); {
		case op < 2 && depth < 3:
			s.Fork()
			depth++
			what = "fork"
		case op < 4 && depth > 0:
			if rng.IntN(2) == 0 {
				s.Revert()
				what = "revert"
			} else {
				s.Commit()
				what = "commit"
			}
			depth--
		case op < 5 && depth > 0:
			if err := s.Replace(snapNode(ni.Node().Name)); err != nil {
				t.Fatal(err)
			}
			what = "replace " + ni.Node().Name
		default:
			added++
			p := snapPod(fmt.Sprintf("added-%d", added), ni.Node().Name, "", rng.IntN(3) == 0)
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(fmt.Sprintf("%dGi", rng.IntN(6)))
			s.AddPod(ni, p)
			what = "add to " + ni.Node().Name
		}
		check(fmt.Sprintf("step %d (%s, depth %d)", step, what, depth))
	}
}
