package provision

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// A round reads the cluster only when something could need capacity. The quiet test follows the
// informer's pods (a refusal makes a pod need capacity, its binding ends that and what Reserve
// booked), a request for a full round, the nodes and NodeClaims that are leaving or launching, and
// once per resync a sweep of the pods for a refusal the handlers missed.
func TestARoundReadsTheClusterOnlyWhenAPodMayNeedCapacity(t *testing.T) {
	q := newQuietTest(t)
	p, clk, nodes, claims, pods, step := q.p, q.clk, q.nodes, q.claims, q.pods, q.step
	step("the first round, which looks at pods pending from before", false)
	step("nothing pending", true)

	fits := newPod("fits", "100m", "100Mi")
	p.PodChanged(nil, fits)
	step("a pod the scheduler has not tried", true)
	if !p.Reserve(fits, "node-a") {
		t.Fatal("Reserve refused an open node")
	}
	bound := fits.DeepCopy()
	bound.Spec.NodeName = "node-a"
	p.PodChanged(fits, bound)
	if len(p.assumed)+len(p.reserved) > 0 {
		t.Fatalf("a bound pod is still booked: assumed %v, reserved %v", p.assumed, p.reserved)
	}
	step("a pod bound where Reserve put it", true)

	big := newPod("big", "64", "1Ti")
	p.PodChanged(nil, big)
	refusedBig := big.DeepCopy()
	refused(refusedBig)
	p.PodChanged(big, refusedBig)
	step("a pod the scheduler refused", false)
	p.PodGone(refusedBig)
	step("that pod deleted", true)

	// A refusal the handlers missed is found by the sweep, once per resync.
	missed := newPod("missed", "64", "1Ti", refused)
	mustAdd(t, pods, missed)
	step("a missed refusal before the resync", true)
	clk.Step(ResyncInterval)
	step("a missed refusal at the resync", false)
	p.PodGone(missed)
	mustDelete(t, pods, missed)

	p.Trigger()
	step("a full round asked for", false)
	step("the round after it", true)

	leaving := readyNode("node-b", "4", "16Gi")
	leaving.Spec.Taints = []corev1.Taint{{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	mustAdd(t, nodes, leaving)
	// The nodes and NodeClaims are listed at most once per NudgeGap while none leaves or
	// launches: the informer handlers ask for a full round at once when one does (Replan,
	// Trigger); this look only backs them up, within a nudge's gap.
	step("a node leaving that no handler told of, within the gap of the last look", true)
	clk.Step(NudgeGap)
	step("a node leaving, whose pods need room elsewhere", false)
	step("still leaving: every round looks again", false)
	mustDelete(t, nodes, leaving)
	step("the node gone", true)
	mustAdd(t, claims, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "launching"}})
	p.Replan()
	step("a NodeClaim launching, with its handler's request for a full round", false)
	clk.Step(NudgeGap)
	step("a NodeClaim launching", false)
}

// quietTest is a provisioner over listers of one ready node, node-a, and step, which checks what
// the quiet test says next.
type quietTest struct {
	p                   *Provisioner
	clk                 *clocktesting.FakeClock
	nodes, claims, pods cache.Indexer
	step                func(what string, want bool)
}

func newQuietTest(t *testing.T) quietTest {
	q := quietTest{clk: clocktesting.NewFakeClock(time.Unix(0, 0)), nodes: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		claims: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}), pods: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	q.p = New(Options{SchedulerName: "tailor", Clock: q.clk, Pods: corelisters.NewPodLister(q.pods),
		Nodes: corelisters.NewNodeLister(q.nodes), ClaimLister: karplisters.NewNodeClaimLister(q.claims)})
	mustAdd(t, q.nodes, readyNode("node-a", "4", "16Gi"))
	q.step = func(what string, want bool) {
		t.Helper()
		if got := q.p.quiet(); got != want {
			t.Fatalf("%s: quiet() = %v, want %v", what, got, want)
		}
	}
	return q
}

func mustAdd(t testing.TB, s cache.Indexer, obj any) {
	t.Helper()
	if err := s.Add(obj); err != nil {
		t.Fatal(err)
	}
}

func mustDelete(t *testing.T, s cache.Indexer, obj any) {
	t.Helper()
	if err := s.Delete(obj); err != nil {
		t.Fatal(err)
	}
}

// Pods the scheduler refused stay known to need capacity until they bind. Once a plan has sent
// one somewhere, rounds over it read the cluster once per resync only, to check the plan against
// it, until the scheduler refuses the pod where it was sent; a pod the refusal backoff holds back
// asks for no more.
func TestAPlannedRefusedPodCostsAFullRoundPerResyncOnly(t *testing.T) {
	q := newQuietTest(t)
	p, clk, pods, step := q.p, q.clk, q.pods, q.step
	looked := func() { p.lookedAt = clk.Now() } // what reconcile records of a full round
	step("the first round", false)
	looked()

	pod := newPod("waiting", "1", "1Gi")
	p.PodChanged(nil, pod)
	was := pod.DeepCopy()
	refused(pod)
	mustAdd(t, pods, pod)
	p.PodChanged(was, pod)
	step("a pod just refused: a burst may be opening", false)
	looked()
	clk.Step(NeedWindow)
	step("the burst over, the pod not planned yet", false)
	looked()

	p.mu.Lock()
	p.headFor(pod, "node-a")
	p.mu.Unlock()
	step("the pod headed for a node, a full round just taken", true)
	clk.Step(ResyncInterval - time.Second)
	step("within a resync of the last full round", true)
	clk.Step(time.Second)
	step("a resync since the last full round: the plan is checked against the cluster", false)
	looked()
	step("the round after it", true)

	refuse := func() {
		clk.Step(time.Second)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cycleFailed(pod.UID)
	}
	refuse()
	step("the scheduler refused it where it was headed", false)
	looked()
	p.Enqueue(pod) // PostFilter hands it over
	step("handed over, not planned yet", false)
	looked()
	p.mu.Lock()
	p.headFor(pod, "node-b") // the round placed it elsewhere
	p.mu.Unlock()
	step("handed over and placed again by a round", true)

	refuse()
	p.mu.Lock()
	p.refusals[pod.UID] = &refusals{until: clk.Now().Add(time.Minute)}
	p.mu.Unlock()
	step("held back by the refusal backoff", true)
	clk.Step(time.Minute)
	looked()
	step("its backoff over", false)
}
