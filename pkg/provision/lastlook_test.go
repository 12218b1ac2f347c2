package provision

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Before a plan's claims are created, each loses the pods that bound or went while the plan was
// made, and a claim left with none is not created (harness seed 1814). A pod only reserved may
// come back (Unreserve), and the pods of a leaving node are still bound there: both stay.
func TestClaimsLoseThePodsPlacedWhileTheyWerePlanned(t *testing.T) {
	bound := newPod("bound", "500m", "512Mi", onNodeNamed("n1"))
	pending := newPod("pending", "500m", "512Mi")
	reserved := newPod("reserved", "500m", "512Mi")
	leaving := newPod("leaving", "500m", "512Mi", onNodeNamed("going"))
	deleted := newPod("deleted", "500m", "512Mi")
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	for _, pod := range []*corev1.Pod{bound, pending, reserved, leaving} {
		_ = store.Add(pod)
	}
	p := New(Options{SchedulerName: "tailor", Clock: clocktesting.NewFakeClock(time.Now()), Pods: corelisters.NewPodLister(store)})
	p.assumed[reserved.UID] = "n2"
	// The plan saw every one of them pending.
	asPlanned := func(pods ...*corev1.Pod) *planner.PlannedClaim {
		pc := &planner.PlannedClaim{NodePool: newPool("default").NodePool}
		for _, pod := range pods {
			pc.Pods = append(pc.Pods, scheduling.Unbound(pod))
		}
		return pc
	}
	claims := []*planner.PlannedClaim{asPlanned(bound, deleted), asPlanned(pending, reserved), asPlanned(leaving)}
	got := p.stillPending(context.Background(), claims, map[types.UID]bool{leaving.UID: true})
	var names [][]string
	for _, pc := range got {
		var ns []string
		for _, pod := range pc.Pods {
			ns = append(ns, pod.Name)
		}
		names = append(names, ns)
	}
	if !reflect.DeepEqual(names, [][]string{{"pending", "reserved"}, {"leaving"}}) {
		t.Errorf("claims to create hold %v; want [[pending reserved] [leaving]]", names)
	}
	if len(claims[0].Pods) != 2 {
		t.Error("the plan's own claim was changed")
	}
}
