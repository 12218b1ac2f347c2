package provision

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// deletions is a NodeClaim client that records deletes; nothing else of it may be called.
type deletions struct {
	karpclient.NodeClaimInterface
	names []string
}

func (d *deletions) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	d.names = append(d.names, name)
	return nil
}

// givingBack is a provisioner over the stores that records the NodeClaims it deletes and the
// Events it writes.
func givingBack(clk clock.WithTicker, podStore, nodeStore, claimStore cache.Indexer) (*Provisioner, *deletions, *events.FakeRecorder) {
	client, recorder := &deletions{}, events.NewFakeRecorder(20)
	p := New(Options{SchedulerName: "tailor", Kube: kubefake.NewClientset(), NodeClaims: client, Clock: clk, Recorder: recorder,
		Pods: corelisters.NewPodLister(podStore), Nodes: corelisters.NewNodeLister(nodeStore),
		ClaimLister: karplisters.NewNodeClaimLister(claimStore)})
	return p, client, recorder
}

// A NodeClaim launched for pods that all went elsewhere is deleted once no pending pod has been on
// its way to it for GiveBackAfter, before or after its instance launched; one a pod landed on, one
// a pending pod is still planned onto, one planned for a pod still on a node being drained, one
// marked do-not-disrupt, and one another process launched are kept.
func TestUnneededClaimsAreGivenBack(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	claimStore, podStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil), cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	nodeStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	claim := func(name, providerID, node string) *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
			Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
		c.Status.ProviderID, c.Status.NodeName = providerID, node
		if node != "" {
			c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", start)
			_ = nodeStore.Add(readyNode(node, "2", "4Gi"))
		}
		_ = claimStore.Add(c)
		return c
	}
	claim("unlaunched", "", "")             // its pod will bind elsewhere
	claim("empty", "aws:///i-1", "n-empty") // launched, nothing ever came
	claim("busy", "aws:///i-2", "n-busy")   // a pod runs there
	claim("waited", "", "")                 // its pod is still pending
	claim("foreign", "aws:///i-3", "n-foreign")
	claim("replacing", "", "") // its pod is still on a node being drained
	claim("pinned", "aws:///i-4", "n-pinned").Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	old := readyNode("n-old", "2", "4Gi")
	old.Spec.Taints = []corev1.Taint{{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	_ = nodeStore.Add(old)
	moving := newPod("moving", "500m", "512Mi")
	moving.Spec.NodeName = old.Name
	left := newPod("left", "500m", "512Mi")
	waiting := newPod("waiting", "500m", "512Mi")
	running := newPod("running", "500m", "512Mi")
	running.Spec.NodeName = "n-busy"
	for _, p := range []*corev1.Pod{left, waiting, running, moving} {
		_ = podStore.Add(p)
	}
	p, client, recorder := givingBack(clk, podStore, nodeStore, claimStore)
	p.mu.Lock()
	for _, name := range []string{"unlaunched", "empty", "busy", "waited", "replacing", "pinned"} {
		p.launchedHere[name] = start
	}
	p.planned[left.UID], p.planned[waiting.UID], p.planned[moving.UID] = "unlaunched", "waited", "replacing"
	p.mu.Unlock()
	before := testutil.ToFloat64(metrics.NodeClaimsGivenBack.WithLabelValues("default", givenBackUnused)) +
		testutil.ToFloat64(metrics.NodeClaimsGivenBack.WithLabelValues("default", givenBackUnlaunched))

	clk.Step(DefaultGiveBackAfter - time.Second)
	p.checkStranded(ctx)
	if len(client.names) != 0 {
		t.Fatalf("gave back %v before GiveBackAfter", client.names)
	}
	clk.Step(2 * time.Second)
	left.Spec.NodeName = "elsewhere" // its pod bound to another node
	_ = podStore.Update(left)
	p.checkStranded(ctx)
	if !slices.Equal(client.names, []string{"empty"}) {
		t.Fatalf("gave back %v; want only the launched claim nothing ever came to", client.names)
	}
	// The last pass that saw a pod on its way to "unlaunched" was at 4 s.
	clk.Step(2 * time.Second)
	p.checkStranded(ctx)
	if len(client.names) != 1 {
		t.Fatalf("gave back %v within GiveBackAfter of a pass that saw a pod on its way to it", client.names)
	}
	clk.Step(time.Second)
	p.checkStranded(ctx)
	p.checkStranded(ctx)
	if !slices.Equal(client.names, []string{"empty", "unlaunched"}) {
		t.Fatalf("gave back %v; want empty, then unlaunched, each once", client.names)
	}
	after := testutil.ToFloat64(metrics.NodeClaimsGivenBack.WithLabelValues("default", givenBackUnused)) +
		testutil.ToFloat64(metrics.NodeClaimsGivenBack.WithLabelValues("default", givenBackUnlaunched))
	if after-before != 2 {
		t.Errorf("tailor_nodeclaims_given_back_total rose by %v, want 2", after-before)
	}
	var said []string
	for len(recorder.Events) > 0 {
		said = append(said, <-recorder.Events)
	}
	joined := strings.Join(said, "\n")
	for _, want := range []string{"Unneeded", "before its instance was launched", "after its instance was launched"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events %q do not say %q", joined, want)
		}
	}
}

// A pod the scheduler reserves onto a node and then lets go (a gang's, released at Permit when
// the gang did not complete) has not landed there: the node's NodeClaim, launched for it, is
// still given back once nothing is on its way to it. One whose pod stays reserved is kept.
func TestUnreservedPodDoesNotLand(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	claimStore, podStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil), cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	nodeStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	for _, name := range []string{"released", "held"} {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
		c.Status.ProviderID, c.Status.NodeName = "aws:///i-"+name, "n-"+name
		c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", start)
		_ = claimStore.Add(c)
		_ = nodeStore.Add(readyNode("n-"+name, "2", "4Gi"))
	}
	released, held := newPod("ring-0", "1", "1Gi"), newPod("ring-1", "1", "1Gi")
	_ = podStore.Add(released)
	_ = podStore.Add(held)
	p, client, _ := givingBack(clk, podStore, nodeStore, claimStore)
	p.mu.Lock()
	p.launchedHere["released"], p.launchedHere["held"] = start, start
	p.mu.Unlock()
	p.Reserve(released, "n-released")
	p.Reserve(held, "n-held")
	p.Unreserve(released, "n-released")

	clk.Step(DefaultGiveBackAfter + time.Second)
	p.checkStranded(ctx)
	if !slices.Equal(client.names, []string{"released"}) {
		t.Fatalf("gave back %v; want only the claim whose pod was reserved there and let go", client.names)
	}
}

// A launched node whose pod waits in a scheduler minutes behind is kept, though no plan heads
// the pod there any more (its plan ended when the claim initialized): the pod may bind there
// yet. Once the pod binds elsewhere the node is given back GiveBackAfter later; a node the
// scheduler had up and refused its pod on is not kept for that pod.
func TestALaunchedNodeWaitsForThePodsItWasLaunchedFor(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	claimStore, podStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil), cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	nodeStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	nodes := map[string]*corev1.Node{}
	for _, name := range []string{"slow", "refused"} {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
		c.Status.ProviderID, c.Status.NodeName = "aws:///i-"+name, "n-"+name
		c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", start)
		_ = claimStore.Add(c)
		n := readyNode("n-"+name, "2", "4Gi")
		n.Labels[karpv1.NodeInitializedLabelKey] = "true"
		nodes[n.Name] = n
		_ = nodeStore.Add(n)
	}
	queued, picky := newPod("queued", "1", "1Gi"), newPod("picky", "1", "1Gi")
	_ = podStore.Add(queued)
	_ = podStore.Add(picky)
	p, client, recorder := givingBack(clk, podStore, nodeStore, claimStore)
	p.mu.Lock()
	p.launchedHere["slow"], p.launchedHere["refused"] = start, start
	p.noteLaunched("slow", []*corev1.Pod{queued})
	p.noteLaunched("refused", []*corev1.Pod{picky})
	p.mu.Unlock()
	// A scheduling cycle had n-refused up and found no place there for picky.
	p.Rejected(picky, func(name string) *corev1.Node { return nodes[name] })

	clk.Step(10 * time.Minute)
	p.checkStranded(ctx)
	if !slices.Equal(client.names, []string{"refused"}) {
		t.Fatalf("gave back %v ten minutes on; want only the node the scheduler refused its pod on", client.names)
	}
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.Contains(e, "Unused") && strings.Contains(e, "n-slow") {
			t.Errorf("reported a node its pod still waits for as unused: %s", e)
		}
	}
	queued.Spec.NodeName = "elsewhere"
	_ = podStore.Update(queued)
	clk.Step(DefaultGiveBackAfter - time.Second)
	p.checkStranded(ctx)
	if len(client.names) != 1 {
		t.Fatalf("gave back %v within GiveBackAfter of its pod binding elsewhere", client.names)
	}
	clk.Step(2 * time.Second)
	p.checkStranded(ctx)
	if !slices.Equal(client.names, []string{"refused", "slow"}) {
		t.Fatalf("gave back %v; want slow too once its pod bound elsewhere", client.names)
	}
}
