package planner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
)

// TestSpecKeyTellsControllersApart: PodTopologySpread's default constraints select the pods of a
// pod's controller, so two pods alike in all but their controller may be counted differently,
// and may not share a kept PreFilter state or a rejection.
func TestSpecKeyTellsControllersApart(t *testing.T) {
	pod := func(name string, opts ...podOpt) *corev1.Pod {
		return newPod(name, "100m", "100Mi", append([]podOpt{labelled("web")}, opts...)...)
	}
	a1, a2 := pod("a1", owned("ReplicaSet", "a")), pod("a2", owned("ReplicaSet", "a"))
	b, loose := pod("b", owned("ReplicaSet", "b")), pod("loose")
	if podkeys.SpecKey(a1) != podkeys.SpecKey(a2) {
		t.Error("two replicas of one ReplicaSet have different spec keys")
	}
	if podkeys.SpecKey(a1) == podkeys.SpecKey(b) {
		t.Error("replicas of two ReplicaSets share a spec key")
	}
	if podkeys.SpecKey(a1) == podkeys.SpecKey(loose) {
		t.Error("a replica and a pod with no controller share a spec key")
	}
}
