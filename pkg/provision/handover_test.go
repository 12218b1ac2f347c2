package provision

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

func ownedBy(uid types.UID) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs-" + string(uid), UID: uid, Controller: ptrTo(true)}}
	}
}

// The scheduler binds a pod to the room its plan kept for a sibling (a pod of the same
// ReplicaSet): the sibling takes the pod's place in the plan instead of heading for a full node.
// A pod of another controller hands nothing over; a sibling that had no place in the plan leaves
// the displaced one to be planned again at once.
func TestReserveHandsTheDisplacedSiblingThePodsPlace(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	setup := func() (*Provisioner, *corev1.Pod, *corev1.Pod) {
		p := New(Options{Clock: clk})
		a, b := newPod("a", "1", "1Gi", ownedBy("rs1")), newPod("b", "1", "1Gi", ownedBy("rs1"))
		p.mu.Lock()
		defer p.mu.Unlock()
		p.planned[a.UID], p.planned[b.UID] = "claim-1", "claim-2"
		p.headFor(a, "n1")
		p.headFor(b, "n2")
		p.admitted[a.UID], p.admitted[b.UID] = "n1", "n2"
		// Refused once, long ago, as a scale-up's pods are before their nodes are up.
		p.needing[a.UID] = need{since: clk.Now().Add(-NeedWindow)}
		p.forced = false // the first round's
		return p, a, b
	}

	p, a, b := setup()
	p.Reserve(b, "n1")
	p.mu.Lock()
	if h, c := p.headed[a.UID], p.planned[a.UID]; h.node != "n2" || c != "claim-2" || p.admitted[a.UID] != "n2" {
		t.Errorf("a heads for %q on claim %q (admitted %q); want n2, claim-2: b took its room on n1", h.node, c, p.admitted[a.UID])
	}
	if p.needsPlanning(clk.Now()) || p.forced {
		t.Error("a round asked for, though a took b's place and is on its way there")
	}
	p.mu.Unlock()

	p, a, _ = setup()
	stranger := newPod("c", "1", "1Gi", ownedBy("rs2"))
	p.Reserve(stranger, "n1")
	p.mu.Lock()
	if h := p.headed[a.UID]; h.node != "n1" || p.planned[a.UID] != "claim-1" {
		t.Errorf("a pod of another ReplicaSet moved a's plan to %q", h.node)
	}
	p.mu.Unlock()

	p, a, _ = setup()
	unplanned := newPod("d", "1", "1Gi", ownedBy("rs1"))
	p.Reserve(unplanned, "n1")
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.headed[a.UID]; ok || p.planned[a.UID] != "" || !p.enqueued[a.UID] {
		t.Errorf("a still heads for %q after an unplanned sibling took its room; want it planned again", p.headed[a.UID].node)
	}
	if !p.needsPlanning(clk.Now()) {
		t.Error("no round would plan a, which has no place left")
	}
}

// A NodeClaim that initialized wakes, in the scheduler's queue, the pending pods a plan sent to its
// node, and no other pod.
func TestInitializedActivatesThePodsPlannedThere(t *testing.T) {
	podStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	var activated []string
	p := New(Options{Clock: clocktesting.NewFakeClock(time.Now()), Pods: corelisters.NewPodLister(podStore),
		Activate: func(pods map[string]*corev1.Pod) {
			for key := range pods {
				activated = append(activated, key)
			}
		}})
	headed, elsewhere, bound := newPod("headed", "1", "1Gi"), newPod("elsewhere", "1", "1Gi"), newPod("bound", "1", "1Gi")
	bound.Spec.NodeName = "n1"
	for _, pod := range []*corev1.Pod{headed, elsewhere, bound} {
		if err := podStore.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	p.headFor(headed, "n1")
	p.headFor(elsewhere, "n2")
	p.headFor(bound, "n1")
	p.mu.Unlock()
	p.Initialized("", "n1")
	if len(activated) != 1 || activated[0] != headed.Namespace+"/"+headed.Name {
		t.Fatalf("activated %v, want only the pending pod headed for n1", activated)
	}
}

// The names kept to wake pods by claim or node go with the pods' plans: a pod that bound is
// forgotten at the next round, and one still headed somewhere is kept.
func TestPodKeysGoWithThePlans(t *testing.T) {
	p := New(Options{Clock: clocktesting.NewFakeClock(time.Now())})
	waiting, landed := newPod("waiting", "1", "1Gi"), newPod("landed", "1", "1Gi")
	p.mu.Lock()
	p.headFor(waiting, "n1")
	p.headFor(landed, "n1")
	listed := p.seq
	p.mu.Unlock()
	landed.Spec.NodeName = "n1"
	p.forgetStale(nil, []*corev1.Pod{waiting, landed}, nil, listed)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.podKeys[waiting.UID] != "default/waiting" || len(p.podKeys) != 1 {
		t.Errorf("pod keys %v after a round; want only default/waiting", p.podKeys)
	}
}
