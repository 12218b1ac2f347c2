package schedulerview

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// zoneNodes are three 2-cpu nodes, one per zone, as three launching NodeClaims will become.
func zoneNodes() []*corev1.Node {
	var out []*corev1.Node
	for i, z := range []string{"zone-a", "zone-b", "zone-c"} {
		name := fmt.Sprintf("node-%d", i)
		out = append(out, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: z}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"),
				corev1.ResourceMemory: resource.MustParse("3Gi"), corev1.ResourcePods: resource.MustParse("29")}},
		})
	}
	return out
}

func zoneSpread(maxSkew int32) podOpt {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "spread"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: maxSkew, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
	}
}

// Nine pods of a zone-spread Deployment, planned three to each of three new nodes. Nominated all
// at once, the scheduler's own two-pass Filter refuses every one of them on its node (the
// deadlock the sandbox met); admissible nominates the one per node that it takes, and all of
// them when maxSkew leaves room for three.
func TestAdmissibleNominationsAreTakenByTheScheduler(t *testing.T) {
	sim := testSimulator(t)
	ctx := context.Background()
	for _, tc := range []struct {
		maxSkew  int32
		admitted int
	}{{maxSkew: 1, admitted: 3}, {maxSkew: 3, admitted: 9}} {
		t.Run(fmt.Sprintf("maxSkew=%d", tc.maxSkew), func(t *testing.T) {
			nodes := zoneNodes()
			var pending []*corev1.Pod
			var wanted []Nomination
			for i := range 9 {
				p := newPod(fmt.Sprintf("spread-%d", i), "500m", "512Mi", zoneSpread(tc.maxSkew))
				p.Status.NominatedNodeName = nodes[i%3].Name
				pending = append(pending, p)
				wanted = append(wanted, Nomination{Pod: p, Node: p.Status.NominatedNodeName})
			}
			all := New(sim, nodes, pending, nil, nil, "tailor")
			refused := 0
			for _, w := range wanted {
				if all.Admits(ctx, all.PreFilter(ctx, w.Pod), w.Pod, w.Node) != nil {
					refused++
				}
			}
			if tc.maxSkew == 1 && refused != 9 {
				t.Fatalf("with every pod nominated, the scheduler refuses %d of 9 on their nodes; the deadlock needs all 9", refused)
			}
			view := New(sim, nodes, pending, nil, nil, "tailor")
			admitted := Admissible(ctx, view, wanted)
			if len(admitted) != tc.admitted {
				t.Fatalf("admitted %d nominations, want %d", len(admitted), tc.admitted)
			}
			perNode := map[string]int{}
			for _, w := range wanted {
				if admitted[w.Pod.UID] {
					perNode[w.Node]++
					if status := view.Admits(ctx, view.PreFilter(ctx, w.Pod), w.Pod, w.Node); status != nil {
						t.Errorf("pod %s admitted to %s, but the scheduler refuses it there beside the others: %v", w.Pod.Name, w.Node, status)
					}
				}
			}
			if len(perNode) != 3 {
				t.Errorf("admitted nominations per node %v, want every node to have one", perNode)
			}
		})
	}
}

// Room is kept for a nomination of equal or higher priority: a pod does not get nominated where
// a higher-priority nomination of the scheduler's leaves it no room, and the pod of higher
// priority among the wanted is nominated first.
func TestAdmissibleHonoursRoomKeptForOthers(t *testing.T) {
	sim := testSimulator(t)
	ctx := context.Background()
	nodes := zoneNodes()[:1]
	theirs := newPod("preemptor", "1500m", "1Gi")
	theirs.Status.NominatedNodeName = nodes[0].Name
	low := newPod("low", "1", "1Gi")
	high := newPod("high", "1", "1Gi")
	high.Spec.Priority = ptrTo(int32(100))
	theirs.Spec.Priority = ptrTo(int32(1000))
	view := New(sim, nodes, []*corev1.Pod{theirs, low, high}, nil, nil, "tailor")
	got := Admissible(ctx, view, []Nomination{{low, nodes[0].Name}, {high, nodes[0].Name}})
	if len(got) != 0 {
		t.Fatalf("admitted %v beside a nomination that leaves no room", got)
	}
	view = New(sim, nodes, []*corev1.Pod{low, high}, nil, nil, "tailor")
	got = Admissible(ctx, view, []Nomination{{low, nodes[0].Name}, {high, nodes[0].Name}})
	if want := map[types.UID]bool{high.UID: true}; len(got) != 1 || !got[high.UID] {
		t.Fatalf("admitted %v, want %v: only one of two 1-cpu pods fits, and the higher priority goes first", got, want)
	}
}

func ptrTo[T any](v T) *T { return &v }

// A node that has registered but whose NodeClaim has not initialized is weighed as its claim: the
// Node may not carry the claim's labels yet, and a refusal read from it would clear nominations
// the node honours a moment later. Once the claim initialized, the Node is what the scheduler
// sees, and what admissible asks.
func TestAdmissibleWeighsALaunchingNodeAsItsClaim(t *testing.T) {
	sim := testSimulator(t)
	ctx := context.Background()
	node := zoneNodes()[0] // registered without the pool's label
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pool-abc", Labels: map[string]string{"team": "a",
		corev1.LabelTopologyZone: "zone-a"}}}
	node.Spec.ProviderID = "fake:///zone-a/i-1"
	claim.Status.NodeName, claim.Status.ProviderID, claim.Status.Allocatable = node.Name, node.Spec.ProviderID, node.Status.Allocatable
	selecting := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"team": "a"} }
	pods := []*corev1.Pod{newPod("a", "500m", "512Mi", selecting), newPod("b", "500m", "512Mi", selecting)}
	wanted := []Nomination{{pods[0], node.Name}, {pods[1], node.Name}}

	got := Admissible(ctx, New(sim, []*corev1.Node{node}, pods, []*karpv1.NodeClaim{claim}, nil, "tailor"), wanted)
	if len(got) != 2 {
		t.Fatalf("launching node: admitted %d of 2 pods; its claim carries the label they select", len(got))
	}
	claim.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "", "", time.Now())
	got = Admissible(ctx, New(sim, []*corev1.Node{node}, pods, []*karpv1.NodeClaim{claim}, nil, "tailor"), wanted)
	if len(got) != 0 {
		t.Fatalf("initialized node without the label: admitted %d pods; the scheduler refuses them there", len(got))
	}
}
