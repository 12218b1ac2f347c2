package provision

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// A pod a plan put on a node that has been up for strandedAfter, and that the scheduler refuses
// there, is stranded: it gets one Stranded Event naming the node and the plugin's answer, is
// counted, loses the nomination Tailor wrote, and is planned again. A node Tailor launched that no
// pod landed on is counted as unused, once.
func TestStrandedPodsAndUnusedNodesAreReported(t *testing.T) {
	testPlanner(t)
	ctx := context.Background()
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	nodes := zoneNodes()[:2] // node-0 gets the pod; node-1 gets none
	pod := newPod("stuck", "500m", "512Mi", nodeSelector("example.com/team", "payments"))
	pod.Status.NominatedNodeName = nodes[0].Name
	nodeStore, podStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil), cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	claimStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	for i, n := range nodes {
		_ = nodeStore.Add(n)
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-" + n.Name}}
		c.Status.NodeName = nodes[i].Name
		c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", start)
		_ = claimStore.Add(c)
	}
	_ = podStore.Add(pod)
	kube := kubefake.NewClientset(pod)
	recorder := events.NewFakeRecorder(10)
	p := New(Options{SchedulerName: "tailor", Kube: kube, Clock: clk, Recorder: recorder,
		Pods: corelisters.NewPodLister(podStore), Nodes: corelisters.NewNodeLister(nodeStore),
		ClaimLister: karplisters.NewNodeClaimLister(claimStore)})
	p.checker = sim
	p.mu.Lock()
	p.headFor(pod, nodes[0].Name)
	p.nominations[pod.UID] = nodes[0].Name
	p.launchedHere["claim-node-1"] = start
	p.mu.Unlock()
	if !p.Ledger().AwaitedNodes[nodes[0].Name] {
		t.Fatal("the node a pending pod is headed for may be disrupted")
	}
	stranded, unused := testutil.ToFloat64(metrics.PodsStrandedTotal), testutil.ToFloat64(metrics.NodesUnusedTotal)

	clk.Step(DefaultStrandedAfter - time.Second)
	p.checkStranded(ctx)
	if len(recorder.Events) != 0 {
		t.Fatalf("reported before strandedAfter: %s", <-recorder.Events)
	}
	clk.Step(2 * time.Second)
	p.checkStranded(ctx)
	var got []string
	for len(recorder.Events) > 0 {
		got = append(got, <-recorder.Events)
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{"Stranded", nodes[0].Name, "NodeAffinity", "Unused", nodes[1].Name} {
		if !strings.Contains(joined, want) {
			t.Errorf("events %q do not mention %q", joined, want)
		}
	}
	if d := testutil.ToFloat64(metrics.PodsStrandedTotal) - stranded; d != 1 {
		t.Errorf("tailor_pods_stranded_total rose by %v, want 1", d)
	}
	if d := testutil.ToFloat64(metrics.NodesUnusedTotal) - unused; d != 1 {
		t.Errorf("tailor_nodes_unused_total rose by %v, want 1", d)
	}
	if g := testutil.ToFloat64(metrics.PodsStranded); g != 1 {
		t.Errorf("tailor_pods_stranded = %v, want 1", g)
	}
	p.mu.Lock()
	_, headed := p.headed[pod.UID]
	enqueued := p.enqueued[pod.UID]
	p.mu.Unlock()
	if p.Ledger().AwaitedNodes[nodes[0].Name] {
		t.Error("the node is still awaited by a pod planned again")
	}
	if headed || !enqueued {
		t.Errorf("after stranding, headed=%v enqueued=%v: want the pod planned again", headed, enqueued)
	}
	after, err := kube.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Status.NominatedNodeName != "" {
		t.Errorf("the nomination Tailor wrote is still %q", after.Status.NominatedNodeName)
	}
	p.checkStranded(ctx)
	if d := testutil.ToFloat64(metrics.NodesUnusedTotal) - unused; d != 1 {
		t.Errorf("an unused node was counted %v times, want once", d)
	}
}

// A pod still pending wakeAfter after the node a plan put it on came up is moved into the
// scheduler's active queue once, and counted; it is not yet stranded.
func TestAPodStillPendingBesideItsNodeIsWokenOnce(t *testing.T) {
	testPlanner(t)
	ctx := context.Background()
	pod := newPod("waiting", "500m", "512Mi")
	c := besideItsNode(pod)
	clk, recorder, node := c.clock, c.recorder, c.node
	var woken []string
	c.opts.Activate = func(pods map[string]*corev1.Pod) {
		for key := range pods {
			woken = append(woken, key)
		}
	}
	p := New(c.opts)
	p.mu.Lock()
	p.headFor(pod, node.Name)
	p.mu.Unlock()
	before := testutil.ToFloat64(metrics.PodsWoken)
	for _, step := range []time.Duration{wakeAfter - time.Second, 2 * time.Second, 2 * time.Second} {
		clk.Step(step)
		p.checkStranded(ctx)
	}
	if len(woken) != 1 || woken[0] != pod.Namespace+"/"+pod.Name {
		t.Errorf("woke %v; want the pod once", woken)
	}
	if d := testutil.ToFloat64(metrics.PodsWoken) - before; d != 1 {
		t.Errorf("tailor_pods_woken_total rose by %v, want 1", d)
	}
	if len(recorder.Events) != 0 {
		t.Errorf("an Event before strandedAfter: %s", <-recorder.Events)
	}
}

// A pod found pending strandedAfter beside its node, where the scheduler's Filter plugins accept
// it, is handed back to the scheduler once rather than planned again (a new plan beside the node
// that holds it would launch a node too many); if it is still pending another strandedAfter on,
// it is stranded and planned again.
func TestAPodTheFilterAcceptsIsHandedBackBeforeItIsPlannedAgain(t *testing.T) {
	for _, failPastFilter := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed past Filter=%v", failPastFilter), func(t *testing.T) { handedBackThenPlannedAgain(t, failPastFilter) })
	}
}

func handedBackThenPlannedAgain(t *testing.T, failPastFilter bool) {
	testPlanner(t)
	ctx := context.Background()
	pod := newPod("unseen", "500m", "512Mi")
	c := besideItsNode(pod)
	clk, recorder, node := c.clock, c.recorder, c.node
	activated := 0
	c.opts.Activate = func(pods map[string]*corev1.Pod) {
		if pods[pod.Namespace+"/"+pod.Name] != nil {
			activated++
		}
	}
	p := New(c.opts)
	p.checker = sim
	p.mu.Lock()
	p.headFor(pod, node.Name)
	p.launchedHere[c.claim.Name] = c.start // launched here: it would be reported Unused were it not busy
	p.mu.Unlock()
	stranded := testutil.ToFloat64(metrics.PodsStrandedTotal)
	state := func() (headed, enqueued bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		_, headed = p.headed[pod.UID]
		return headed, p.enqueued[pod.UID]
	}

	clk.Step(wakeAfter)
	p.checkStranded(ctx) // woken
	clk.Step(DefaultStrandedAfter)
	p.checkStranded(ctx) // stranded, the Filter accepts it: handed back
	if len(recorder.Events) != 0 {
		t.Errorf("an Event for a pod handed back, or its node: %s", <-recorder.Events)
	}
	if headed, enqueued := state(); !headed || enqueued {
		t.Errorf("handed back: headed=%v enqueued=%v; want it still headed for %s, not planned again", headed, enqueued, node.Name)
	}
	if activated != 2 {
		t.Errorf("activated %d times, want twice (woken, then handed back)", activated)
	}
	if d := testutil.ToFloat64(metrics.PodsStrandedTotal) - stranded; d != 0 {
		t.Errorf("tailor_pods_stranded_total rose by %v for a pod handed back, want 0", d)
	}

	clk.Step(DefaultStrandedAfter - time.Second)
	p.checkStranded(ctx)
	if headed, _ := state(); !headed || len(recorder.Events) != 0 {
		t.Fatalf("planned again, or an Event (%d), before another strandedAfter (headed=%v)", len(recorder.Events), headed)
	}
	clk.Step(2 * time.Second)
	p.checkStranded(ctx)
	// No scheduling cycle for it has failed since it was handed back: it waits its turn in the
	// scheduler's queue, and is handed back again rather than planned anew.
	if headed, enqueued := state(); !headed || enqueued || len(recorder.Events) != 0 {
		t.Fatalf("planned again, or an Event (%d), though no cycle for it failed since it was handed back (headed=%v, enqueued=%v)",
			len(recorder.Events), headed, enqueued)
	}
	if activated != 3 {
		t.Errorf("activated %d times, want three (woken, handed back, handed back again)", activated)
	}
	clk.Step(time.Second)
	if failPastFilter {
		// Reserved on its node, then let go (a Permit or a binding that failed).
		if !p.Reserve(pod, node.Name) {
			t.Fatal("Reserve refused the pod its own node")
		}
		p.Unreserve(pod, node.Name)
	} else {
		p.Rejected(pod, func(string) *corev1.Node { return nil }) // no node fit
	}
	clk.Step(DefaultStrandedAfter)
	p.checkStranded(ctx)
	if headed, enqueued := state(); headed || !enqueued {
		t.Errorf("a cycle failed after it was handed back: headed=%v enqueued=%v; want it planned again", headed, enqueued)
	}
	if len(recorder.Events) != 1 {
		t.Fatalf("%d Events, want one Stranded", len(recorder.Events))
	}
	if e := <-recorder.Events; !strings.Contains(e, "Stranded") || !strings.Contains(e, "they accept it (a scheduling cycle for it failed") || !strings.Contains(e, "Pending 1m37s") {
		t.Errorf("Event %q; want Stranded with the whole wait (1m37s) and the Filter's answer", e)
	}
	if d := testutil.ToFloat64(metrics.PodsStrandedTotal) - stranded; d != 1 {
		t.Errorf("tailor_pods_stranded_total rose by %v, want 1", d)
	}
}

// oneNode is a cluster of one node, whose NodeClaim initialized at start, and one pending pod,
// with the provisioner's Options for it: listers, a client holding the pod, the fake clock and
// a recorder set, the rest left to the test.
type oneNode struct {
	opts     Options
	start    time.Time
	clock    *clocktesting.FakeClock
	recorder *events.FakeRecorder
	node     *corev1.Node
	claim    *karpv1.NodeClaim
}

func besideItsNode(pods ...*corev1.Pod) oneNode {
	start := time.Now()
	node := zoneNodes()[0]
	nodeStore, podStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil), cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	claimStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	_ = nodeStore.Add(node)
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-" + node.Name}}
	c.Status.NodeName = node.Name
	c.Status.Capacity, c.Status.Allocatable = node.Status.Allocatable, node.Status.Allocatable
	c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", start)
	_ = claimStore.Add(c)
	objects := make([]runtime.Object, 0, len(pods))
	for _, pod := range pods {
		_ = podStore.Add(pod)
		objects = append(objects, pod)
	}
	clk, recorder := clocktesting.NewFakeClock(start), events.NewFakeRecorder(10)
	return oneNode{opts: Options{SchedulerName: "tailor", Kube: kubefake.NewClientset(objects...), Clock: clk, Recorder: recorder,
		Pods: corelisters.NewPodLister(podStore), Nodes: corelisters.NewNodeLister(nodeStore),
		ClaimLister: karplisters.NewNodeClaimLister(claimStore)}, start: start, clock: clk, recorder: recorder, node: node, claim: c}
}

// A node that has been up for a while is not unused while a pod a later plan put there waits to
// bind: in a long scale-up such pods wait their turn in the scheduler's queue, and the node would
// be reported Unused (an Event, tailor_nodes_unused) before their wait counts as stranded.
func TestANodeAPendingPodIsHeadedToIsNotUnused(t *testing.T) {
	testPlanner(t)
	pod := newPod("late", "500m", "512Mi")
	c := besideItsNode(pod)
	p := New(c.opts)
	p.mu.Lock()
	p.launchedHere[c.claim.Name] = c.start
	p.mu.Unlock()
	c.clock.Step(DefaultStrandedAfter + time.Second)
	p.mu.Lock()
	p.headFor(pod, c.node.Name) // planned there now, long after the node came up
	p.mu.Unlock()
	p.checkStranded(context.Background())
	if len(c.recorder.Events) != 0 {
		t.Errorf("an Event while a pod is on its way to the node: %s", <-c.recorder.Events)
	}
	if got := testutil.ToFloat64(metrics.NodesUnused); got != 0 {
		t.Errorf("tailor_nodes_unused = %v while a pod is on its way to the node, want 0", got)
	}

	// Once nothing is on its way and nothing landed, it is unused.
	p.mu.Lock()
	delete(p.headed, pod.UID)
	p.mu.Unlock()
	p.checkStranded(context.Background())
	if got := testutil.ToFloat64(metrics.NodesUnused); got != 1 {
		t.Errorf("tailor_nodes_unused = %v with nothing on its way to the node, want 1", got)
	}
}

// A pod planned elsewhere while the Filter plugins were asked about its old node is neither
// planned again nor handed back: the finding is stale, and its new heading has a clock of its own.
func TestAStaleStrandedFindingIsDropped(t *testing.T) {
	testPlanner(t)
	pod := newPod("moved", "500m", "512Mi")
	c := besideItsNode(pod)
	activated := 0
	c.opts.Activate = func(map[string]*corev1.Pod) { activated++ }
	p := New(c.opts)
	p.mu.Lock()
	p.headFor(pod, "node-planned-since")
	p.mu.Unlock()
	for _, accepted := range []bool{true, false} {
		rest := p.retryAccepted(context.Background(), []strandedPod{{pod: pod, node: c.node.Name, accepted: accepted, answer: "asked"}})
		if len(rest) != 0 || activated != 0 {
			t.Errorf("accepted=%v: %d pods to plan again and %d activations for a pod now headed elsewhere, want none", accepted, len(rest), activated)
		}
	}
	p.mu.Lock()
	h := p.headed[pod.UID]
	p.mu.Unlock()
	if h.node != "node-planned-since" || !h.retried.IsZero() {
		t.Errorf("heading %+v, want the new one untouched", h)
	}
}

// The pods found stranded are asked about together, at most a few times per strandedAfter: each
// ask takes a snapshot of the whole cluster, and in a long scale-up pods come of age at every tick
// of the watch.
func TestStrandedPodsAreAskedAboutTogether(t *testing.T) {
	testPlanner(t)
	first, second := newPod("first", "500m", "512Mi"), newPod("second", "500m", "512Mi")
	c := besideItsNode(first, second)
	var handedBack []string
	c.opts.Activate = func(pods map[string]*corev1.Pod) {
		for key := range pods {
			handedBack = append(handedBack, key)
		}
	}
	p := New(c.opts)
	p.checker = sim
	ctx := context.Background()
	head := func(pod *corev1.Pod) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.headFor(pod, c.node.Name)
		p.woken[pod.UID] = c.node.Name // woken already: only the hand-backs are counted here
	}
	head(first)
	c.clock.Step(wakeAfter / 2)
	head(second)
	c.clock.Step(DefaultStrandedAfter - wakeAfter/2)
	p.checkStranded(ctx)
	if want := []string{"default/first"}; !slices.Equal(handedBack, want) {
		t.Fatalf("handed back %v at strandedAfter, want %v", handedBack, want)
	}
	c.clock.Step(wakeAfter / 2)
	p.checkStranded(ctx)
	if len(handedBack) != 1 {
		t.Fatalf("handed back %v at the next tick, want the second pod left for the next ask", handedBack)
	}
	c.clock.Step(DefaultStrandedAfter/3 - wakeAfter/2)
	p.checkStranded(ctx)
	if want := []string{"default/first", "default/second"}; !slices.Equal(handedBack, want) {
		t.Fatalf("handed back %v a third of strandedAfter after the first ask, want %v", handedBack, want)
	}
}
