package disruption

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// lastPodEventWriteInterval is how stale status.lastPodEventTime may be: a busy node would
// otherwise write its claim on every pod that comes or goes. Memory holds the exact time; only a
// restart loses up to this much of it.
const lastPodEventWriteInterval = 10 * time.Second

// ConsolidatableOptions are what the Consolidatable controller reads and writes.
type ConsolidatableOptions struct {
	NodeClaims  karpclient.NodeClaimInterface
	ClaimLister karplisters.NodeClaimLister
	PoolLister  karplisters.NodePoolLister
	ClaimInform cache.SharedIndexInformer
	PodInform   cache.SharedIndexInformer
	Clock       clock.WithTicker
	// Changed is told when a claim turns Consolidatable, so the loop looks at once.
	Changed func()
}

// Consolidatable keeps each NodeClaim's lastPodEventTime (when a pod last bound to or left its
// node) and its Consolidatable condition: True once the NodePool's consolidateAfter has passed
// since then (or since the node initialized), False with the reason otherwise.
type Consolidatable struct {
	opts  ConsolidatableOptions
	queue *controller.Queue

	mu sync.Mutex
	// lastEvent is the exact time of each node's last pod event, by node name.
	lastEvent map[string]time.Time
}

// NewConsolidatable registers the event handlers; call it before the informers start.
func NewConsolidatable(opts ConsolidatableOptions) (*Consolidatable, error) {
	c := &Consolidatable{opts: opts, lastEvent: map[string]time.Time{}}
	c.queue = controller.NewQueue("consolidatable", opts.Clock, c.reconcile)
	// Pod events name a node; finding its claim must not scan every claim, once per pod event.
	if err := opts.ClaimInform.AddIndexers(cache.Indexers{byNodeName: func(obj any) ([]string, error) {
		if claim, ok := obj.(*karpv1.NodeClaim); ok && claim.Status.NodeName != "" {
			return []string{claim.Status.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	if _, err := opts.ClaimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueClaim(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueClaim(obj) },
	}); err != nil {
		return nil, err
	}
	_, err := opts.PodInform.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		// The informer's first listing is not a pod event: it shows the pods a previous leader saw
		// come, and counting them as arriving now would restart every node's consolidateAfter on
		// each restart or failover. The claim's stored lastPodEventTime stands for them.
		AddFunc: func(obj any, isInInitialList bool) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" && !isInInitialList {
				c.podEvent(p.Spec.NodeName)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			old, ok1 := oldObj.(*corev1.Pod)
			p, ok2 := obj.(*corev1.Pod)
			if !ok1 || !ok2 || p.Spec.NodeName == "" {
				return
			}
			if old.Spec.NodeName != p.Spec.NodeName || terminal(old) != terminal(p) {
				c.podEvent(p.Spec.NodeName)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
				c.podEvent(p.Spec.NodeName)
			}
		},
	})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Consolidatable) Run(ctx context.Context) { c.queue.Run(ctx, 2) }

// PoolChanged re-checks every claim of a NodePool, e.g. when its consolidateAfter changed.
func (c *Consolidatable) PoolChanged(pool string) {
	claims, _ := c.opts.ClaimLister.List(labels.Everything()) // an informer's lister never fails
	for _, claim := range claims {
		if claim.Labels[karpv1.NodePoolLabelKey] == pool {
			c.queue.Add(claim.Name)
		}
	}
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func (c *Consolidatable) enqueueClaim(obj any) {
	if claim, ok := obj.(*karpv1.NodeClaim); ok {
		c.queue.Add(claim.Name)
	}
}

func (c *Consolidatable) podEvent(node string) {
	c.mu.Lock()
	c.lastEvent[node] = c.opts.Clock.Now()
	c.mu.Unlock()
	claims, _ := c.opts.ClaimInform.GetIndexer().ByIndex(byNodeName, node)
	for _, obj := range claims {
		c.enqueueClaim(obj)
	}
}

// byNodeName indexes NodeClaims by status.nodeName.
const byNodeName = "tailor.sh/nodeName"

func (c *Consolidatable) reconcile(ctx context.Context, name string) (time.Duration, error) {
	claim, err := c.opts.ClaimLister.Get(name)
	if err != nil || claim.DeletionTimestamp != nil || !claim.IsTrue(karpv1.ConditionTypeInitialized) {
		return 0, nil
	}
	pool, err := c.opts.PoolLister.Get(claim.Labels[karpv1.NodePoolLabelKey])
	if err != nil {
		return 0, nil
	}
	now := c.opts.Clock.Now()
	c.mu.Lock()
	last, known := c.lastEvent[claim.Status.NodeName]
	c.mu.Unlock()
	stored := claim.Status.LastPodEventTime.Time
	if !known || stored.After(last) {
		last = stored
	}
	since := claim.GetCondition(karpv1.ConditionTypeInitialized).LastTransitionTime.Time
	if last.After(since) {
		since = last
	}
	status, reason, msg, requeue := consolidatable(pool, since, now)
	out := claim.DeepCopy()
	changed := out.SetCondition(karpv1.ConditionTypeConsolidatable, status, reason, msg, now)
	// The exact time rides along with a write that happens anyway; alone it is written only when
	// the stored one is lastPodEventWriteInterval stale. With consolidateAfter 0 (or long past) the
	// condition stays True through every pod that binds or leaves, and writing each would be a
	// status write per pod: the condition, not the time, is what disruption reads.
	if last.Sub(stored) >= lastPodEventWriteInterval || (changed && last.After(stored)) {
		out.Status.LastPodEventTime = metav1.NewTime(last)
		changed = true
	}
	if changed {
		if _, err := c.opts.NodeClaims.UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
			return 0, err
		}
		if status == metav1.ConditionTrue && c.opts.Changed != nil {
			c.opts.Changed()
		}
	}
	// A clock that jumps (a test's, or after a suspend) is noticed within recheck.
	return min(requeue, recheck), nil
}

// recheck bounds the wait for consolidateAfter to pass.
const recheck = 10 * time.Second

// consolidatable decides the condition from the pool's consolidateAfter and the time the node's
// pods last changed, and when to look again.
func consolidatable(pool *karpv1.NodePool, since, now time.Time) (metav1.ConditionStatus, string, string, time.Duration) {
	after := pool.Spec.Disruption.ConsolidateAfter
	if after.IsNever() {
		return metav1.ConditionFalse, "ConsolidationDisabled", fmt.Sprintf("NodePool %s has consolidateAfter: Never", pool.Name), 0
	}
	if left := since.Add(*after.Duration).Sub(now); left > 0 {
		return metav1.ConditionFalse, "PodsChangedRecently", fmt.Sprintf("consolidateAfter %s has not passed since the node's pods last changed", after.String()), left
	}
	return metav1.ConditionTrue, "Consolidatable", fmt.Sprintf("no pod came or went for consolidateAfter %s", after.String()), 0
}
