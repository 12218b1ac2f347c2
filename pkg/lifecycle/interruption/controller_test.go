package interruption

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/lifecycle/forceful"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// claims is the NodeClaim API as the controller and the Disrupter use it: one claim, whose
// deletions are counted, and no others. Methods it does not override are never called.
type claims struct {
	karpclient.NodeClaimInterface
	claim   *karpv1.NodeClaim
	deletes atomic.Int32
}

func (c *claims) Get(context.Context, string, metav1.GetOptions) (*karpv1.NodeClaim, error) {
	return c.claim.DeepCopy(), nil
}

func (c *claims) UpdateStatus(_ context.Context, claim *karpv1.NodeClaim, _ metav1.UpdateOptions) (*karpv1.NodeClaim, error) {
	return claim, nil
}

func (c *claims) Delete(context.Context, string, metav1.DeleteOptions) error {
	c.deletes.Add(1)
	time.Sleep(10 * time.Millisecond) // the API round trip, so copies overlap
	return nil
}

func (c *claims) List(context.Context, metav1.ListOptions) (*karpv1.NodeClaimList, error) {
	return &karpv1.NodeClaimList{}, nil
}

func outcome(kind cloud.InterruptionKind, o string) float64 {
	return testutil.ToFloat64(metrics.InterruptionNotices.WithLabelValues(string(kind), o))
}

// TestCopiesOfANoticeActOnce: ten copies of a spot notice handled at once delete the claim once;
// a later notice of another kind for the leaving node does nothing; a rebalance recommendation
// is recorded once however often it comes; an instance no claim has is counted unknown.
func TestCopiesOfANoticeActOnce(t *testing.T) {
	const pid = "aws:///us-west-2a/i-0123456789abcdef0"
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{karpv1.NodePoolLabelKey: "pool"}}}
	claim.Status.ProviderID = pid
	api := &claims{claim: claim}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(claim); err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	nodes, pods := factory.Core().V1().Nodes().Lister(), factory.Core().V1().Pods().Lister()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(Options{NodeClaims: api, ClaimLister: karplisters.NewNodeClaimLister(indexer), Nodes: nodes, Clock: clk,
		Disrupter: forceful.New(forceful.Options{Kube: kube, NodeClaims: api, Nodes: nodes, Pods: pods, Clock: clk,
			PlanNow: func(context.Context) error { return nil }})})

	spot := cloud.Interruption{ProviderID: pid, Kind: cloud.InterruptionSpot, Deadline: clk.Now().Add(2 * time.Minute)}
	disrupted, duplicate := outcome(spot.Kind, OutcomeDisrupted), outcome(spot.Kind, OutcomeDuplicate)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := c.Handle(ctx, spot); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := api.deletes.Load(); n != 1 {
		t.Errorf("ten copies of a spot notice deleted the claim %d times, want once", n)
	}
	if d, dup := outcome(spot.Kind, OutcomeDisrupted)-disrupted, outcome(spot.Kind, OutcomeDuplicate)-duplicate; d != 1 || dup != 9 {
		t.Errorf("outcomes Disrupted %v, Duplicate %v; want 1 and 9", d, dup)
	}

	stopping := cloud.Interruption{ProviderID: pid, Kind: cloud.InterruptionStopping}
	already := outcome(stopping.Kind, OutcomeAlreadyRemoving)
	if err := c.Handle(ctx, stopping); err != nil {
		t.Fatal(err)
	}
	if n := api.deletes.Load(); n != 1 || outcome(stopping.Kind, OutcomeAlreadyRemoving)-already != 1 {
		t.Errorf("a state change for the leaving node: %d deletions, AlreadyRemoving +%v; want 1 and +1", n, outcome(stopping.Kind, OutcomeAlreadyRemoving)-already)
	}

	rebalance := cloud.Interruption{ProviderID: pid, Kind: cloud.InterruptionRebalance}
	recorded, dupRebalance := outcome(rebalance.Kind, OutcomeRecorded), outcome(rebalance.Kind, OutcomeDuplicate)
	for range 2 {
		if err := c.Handle(ctx, rebalance); err != nil {
			t.Fatal(err)
		}
	}
	if r, d := outcome(rebalance.Kind, OutcomeRecorded)-recorded, outcome(rebalance.Kind, OutcomeDuplicate)-dupRebalance; r != 1 || d != 1 {
		t.Errorf("two rebalance recommendations: Recorded +%v, Duplicate +%v; want +1 each", r, d)
	}

	// Forgotten after rememberFor: a copy that late is judged by the claim again.
	clk.Step(rememberFor + time.Second)
	recorded = outcome(rebalance.Kind, OutcomeRecorded)
	if err := c.Handle(ctx, rebalance); err != nil || outcome(rebalance.Kind, OutcomeRecorded)-recorded != 1 {
		t.Errorf("a rebalance recommendation after %v: %v, Recorded +%v; want recorded again", rememberFor, err, outcome(rebalance.Kind, OutcomeRecorded)-recorded)
	}

	unknown := cloud.Interruption{ProviderID: "aws:///us-west-2a/i-0fffffffffffffff0", Kind: cloud.InterruptionSpot}
	before := outcome(unknown.Kind, OutcomeUnknown)
	if err := c.Handle(ctx, unknown); err != nil || outcome(unknown.Kind, OutcomeUnknown)-before != 1 {
		t.Errorf("a notice for no claim's instance: %v, Unknown +%v", err, outcome(unknown.Kind, OutcomeUnknown)-before)
	}
}

// A process stopped between tainting an interrupted node (DisruptionReason Interrupted recorded)
// and deleting its NodeClaim leaves the node leaving with no drain; the next process finishes
// the removal as it starts, rather than a visibility timeout later when the queue delivers the
// notice again, and the copy that then comes does nothing twice. Claims with another reason, or
// already being deleted, are left alone.
func TestResumeFinishesAnInterruptionCutShort(t *testing.T) {
	const pid = "aws:///us-west-2a/i-0123456789abcdef0"
	now := time.Now()
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{karpv1.NodePoolLabelKey: "pool"}}}
	claim.Status.ProviderID = pid
	claim.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, Method, "Spot interruption for instance "+pid, now)
	expired := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c2"}}
	expired.Status.ProviderID = "aws:///us-west-2a/i-0000000000000000e"
	expired.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, "Expired", "expired", now)
	deleting := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c3", DeletionTimestamp: &metav1.Time{Time: now}}}
	deleting.Status.ProviderID = "aws:///us-west-2a/i-0000000000000000d"
	deleting.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, Method, "already draining", now)
	api := &claims{claim: claim}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range []*karpv1.NodeClaim{claim, expired, deleting} {
		if err := indexer.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	kube := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	nodes, pods := factory.Core().V1().Nodes().Lister(), factory.Core().V1().Pods().Lister()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	clk := clocktesting.NewFakeClock(now)
	c := New(Options{NodeClaims: api, ClaimLister: karplisters.NewNodeClaimLister(indexer), Nodes: nodes, Clock: clk,
		Disrupter: forceful.New(forceful.Options{Kube: kube, NodeClaims: api, Nodes: nodes, Pods: pods, Clock: clk,
			PlanNow: func(context.Context) error { return nil }})})

	c.Resume(ctx)
	if n := api.deletes.Load(); n != 1 {
		t.Fatalf("Resume deleted %d NodeClaims, want the interrupted one only", n)
	}
	again := outcome(cloud.InterruptionSpot, OutcomeAlreadyRemoving)
	if err := c.Handle(ctx, cloud.Interruption{ProviderID: pid, Kind: cloud.InterruptionSpot}); err != nil {
		t.Fatal(err)
	}
	if n := api.deletes.Load(); n != 1 || outcome(cloud.InterruptionSpot, OutcomeAlreadyRemoving)-again != 1 {
		t.Errorf("the notice delivered again after Resume: %d deletions, AlreadyRemoving +%v; want 1 and +1", n, outcome(cloud.InterruptionSpot, OutcomeAlreadyRemoving)-again)
	}
}
