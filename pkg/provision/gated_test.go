package provision

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// A pod the gate kept out while held is let back in by the next round once its hold ends,
// whatever ended it (here its plan is forgotten, which activates nothing by itself), once; a
// gated pod that bound or went away is forgotten without being activated, and so is one of a
// gang given back.
func TestGatedPodsAreLetInWhenTheirHoldEnds(t *testing.T) {
	start := time.Now()
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-b", CreationTimestamp: metav1.NewTime(start)}}
	claim.Status.NodeName = "node-b"
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	_ = claims.Add(claim)
	p := New(Options{SchedulerName: "tailor", Clock: clocktesting.NewFakeClock(start), ClaimLister: karplisters.NewNodeClaimLister(claims)})
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	}
	waiting, replanned, bound, gone, free := pod("waiting"), pod("replanned"), pod("bound"), pod("gone"), pod("free")
	gang := pod("gang")
	p.mu.Lock()
	for _, pd := range []*corev1.Pod{waiting, replanned, bound, gone, gang} {
		p.planned[pd.UID] = claim.Name
	}
	p.mu.Unlock()
	for _, pd := range []*corev1.Pod{waiting, replanned, bound, gone, gang, free} {
		p.Gate(pd)
	}
	if len(p.gated) != 5 {
		t.Fatalf("gate remembered %d pods, want the 5 held ones", len(p.gated))
	}
	p.mu.Lock()
	delete(p.planned, replanned.UID) // its plan forgotten: no event, no activation
	delete(p.planned, gang.UID)      // its gang given back
	p.forgetGated([]*corev1.Pod{gang})
	p.mu.Unlock()
	boundNow := bound.DeepCopy()
	boundNow.Spec.NodeName = "node-a"
	listed := []*corev1.Pod{waiting, replanned, boundNow, gang, free} // "gone" is no longer listed
	got := p.ungated(listed)
	if len(got) != 1 || got["default/replanned"] == nil {
		t.Fatalf("ungated = %v, want default/replanned alone", keysOf(got))
	}
	if len(p.gated) != 1 || !p.gated[waiting.UID] {
		t.Errorf("still remembered: %v; want the pod still held alone", p.gated)
	}
	if again := p.ungated(listed); len(again) != 0 {
		t.Errorf("the second round activated %v again", keysOf(again))
	}
}

func keysOf(m map[string]*corev1.Pod) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
