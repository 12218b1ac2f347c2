package provision

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Every Reserve on a closed node is refused; every Reserve before Close is in what Close returns.
// Hammered from many goroutines, as the scheduler and the disruption loop would.
func TestCloseSeesOrRefusesEveryReserve(t *testing.T) {
	for round := range 50 {
		var refusedMu sync.Mutex
		var activated []string
		p := New(Options{Clock: clocktesting.NewFakeClock(time.Now()), Activate: func(pods map[string]*corev1.Pod) {
			refusedMu.Lock()
			defer refusedMu.Unlock()
			for key := range pods {
				activated = append(activated, key)
			}
		}})
		pods := pods(200, "10m", "16Mi")
		accepted := make([]bool, len(pods))
		var wg sync.WaitGroup
		var seen map[string]bool
		for i, pod := range pods {
			wg.Go(func() { accepted[i] = p.Reserve(pod, "n1") })
			if i == round {
				wg.Go(func() {
					seen = map[string]bool{}
					for uid := range p.Close([]string{"n1"}) {
						seen[string(uid)] = true
					}
				})
			}
		}
		wg.Wait()
		refused := 0
		for i, pod := range pods {
			switch {
			case accepted[i] && !seen[string(pod.UID)]:
				t.Fatalf("round %d: pod %s was reserved onto the node but Close did not return it", round, pod.Name)
			case !accepted[i]:
				refused++
			}
		}
		p.Reopen([]string{"n1"})
		if len(activated) != refused {
			t.Fatalf("round %d: %d pods refused, %d activated on Reopen", round, refused, len(activated))
		}
	}
}

// An assumption or a plan written after the informers were listed is not forgotten for missing
// from that listing.
func TestForgetStaleKeepsWritesNewerThanTheListing(t *testing.T) {
	p := New(Options{Clock: clocktesting.NewFakeClock(time.Now())})
	old, fresh, bound := newPod("old", "1", "1Gi"), newPod("fresh", "1", "1Gi"), newPod("bound", "1", "1Gi")
	p.Reserve(old, "n1")
	p.Reserve(bound, "n1")
	listed := p.listed()
	p.Reserve(fresh, "n1")
	p.Adopt("claim-new", []*corev1.Pod{newPod("adopted", "1", "1Gi")})
	bound.Spec.NodeName = "n1"
	claims := []*karpv1.NodeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "other"}}}
	cluster, _ := p.forgetStale(nil, []*corev1.Pod{bound}, claims, listed)
	if _, ok := cluster.Assumed[old.UID]; ok {
		t.Errorf("an assumption older than the listing, of a pod the listing lacks, was kept")
	}
	if _, ok := cluster.Assumed[bound.UID]; ok {
		t.Errorf("the assumption of a pod listed as bound was kept")
	}
	if _, ok := cluster.Assumed[fresh.UID]; !ok {
		t.Errorf("an assumption newer than the listing was forgotten")
	}
	if len(cluster.Planned) != 1 {
		t.Errorf("a plan onto a claim newer than the listing was forgotten: %v", cluster.Planned)
	}
}

// A pod whose binding fails after Reserve is pending again with its plan: PostFilter still keeps
// its nomination to the node planned for it, and the stranded watch still knows where it heads.
func TestUnreserveGivesThePlanBack(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := New(Options{Clock: clk})
	pod := newPod("a", "1", "1Gi")
	p.mu.Lock()
	p.destined[pod.UID] = destination{node: "n1", until: clk.Now().Add(NominationWindow)}
	p.headFor(pod, "n1")
	p.admitted[pod.UID] = "n1"
	p.mu.Unlock()
	if node, ok := p.NominatedNode(pod); !ok || node != "n1" {
		t.Fatalf("before Reserve: NominatedNode = %q, %v; want n1, true", node, ok)
	}
	p.Reserve(pod, "n1")
	if _, ok := p.NominatedNode(pod); ok {
		t.Fatalf("a reserved pod is still nominated by PostFilter")
	}
	p.Unreserve(pod, "n1")
	if node, ok := p.NominatedNode(pod); !ok || node != "n1" {
		t.Fatalf("after Unreserve: NominatedNode = %q, %v; want n1, true", node, ok)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.headed[pod.UID]; h.node != "n1" {
		t.Fatalf("after Unreserve the pod heads for %q, want n1", h.node)
	}
}
