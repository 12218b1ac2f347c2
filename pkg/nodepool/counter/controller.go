// Package counter keeps each NodePool's status.resources: the summed capacity of its NodeClaims,
// with "nodes" holding their count, as Karpenter's NodePool counter does. `kubectl get nodepools`
// reads its Nodes column, and `-o wide` its CPU and Memory columns, from there.
package counter

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// ResourceNodes is the key of status.resources that counts the pool's nodes.
const ResourceNodes corev1.ResourceName = "nodes"

// Resync is how often a pool is counted again without an event: a safety net, since every change
// of a NodeClaim already enqueues its pool.
const Resync = time.Minute

// countEvery is the least time between two counts of one pool. Every write to any of a pool's
// NodeClaims enqueues it, and each count lists the pool's claims: a scale-up to 5,000 NodeClaims
// counted its pool several times per claim, 5% of two cores in a profile of the fleet at 20,000
// pods, each count a status write. status.resources is for people and dashboards; the planner
// counts limits from the claims themselves.
const countEvery = time.Second

// Options are what the controller reads and writes.
type Options struct {
	NodePools   karpclient.NodePoolInterface
	PoolLister  karplisters.NodePoolLister
	PoolInform  cache.SharedIndexInformer
	ClaimLister karplisters.NodeClaimLister
	ClaimInform cache.SharedIndexInformer
	Clock       clock.WithTicker
}

// Controller writes status.resources on NodePools.
type Controller struct {
	opts  Options
	queue *controller.Queue
	// counted is when each pool was last counted (see countEvery); only the queue's one worker
	// reads and writes it.
	counted map[string]time.Time
}

// New registers the event handlers; call it before the informers start.
func New(opts Options) (*Controller, error) {
	c := &Controller{opts: opts, counted: map[string]time.Time{}}
	c.queue = controller.NewQueue("nodepool-counter", opts.Clock, c.reconcile)
	onPool := func(obj any) {
		if np, ok := obj.(*karpv1.NodePool); ok {
			c.queue.Add(np.Name)
		}
	}
	if _, err := opts.PoolInform.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onPool}); err != nil {
		return nil, err
	}
	onClaim := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if claim, ok := obj.(*karpv1.NodeClaim); ok && claim.Labels[karpv1.NodePoolLabelKey] != "" {
			c.queue.Add(claim.Labels[karpv1.NodePoolLabelKey])
		}
	}
	_, err := opts.ClaimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onClaim,
		UpdateFunc: func(_, n any) { onClaim(n) }, DeleteFunc: onClaim})
	return c, err
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1) }

func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	np, err := c.opts.PoolLister.Get(name)
	if err != nil || np.DeletionTimestamp != nil {
		delete(c.counted, name)
		return 0, nil
	}
	if last, ok := c.counted[name]; ok {
		if wait := countEvery - c.opts.Clock.Since(last); wait > 0 {
			return wait, nil
		}
	}
	c.counted[name] = c.opts.Clock.Now()
	claims, err := c.opts.ClaimLister.List(labels.SelectorFromSet(labels.Set{karpv1.NodePoolLabelKey: name}))
	if err != nil {
		return 0, fmt.Errorf("listing the NodeClaims of NodePool %s: %w", name, err)
	}
	counted := Count(claims)
	if equality.Semantic.DeepEqual(np.Status.Resources, counted) {
		return Resync, nil
	}
	np = np.DeepCopy()
	np.Status.Resources = counted
	if _, err := c.opts.NodePools.UpdateStatus(ctx, np, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("writing NodePool %s status.resources: %w", name, err)
	}
	return Resync, nil
}

// Count sums the capacity of the claims, which the cloud reports once each launches, and counts
// them under "nodes". A claim still launching counts as a node with no capacity yet; one being
// deleted counts until it is gone, as its instance runs until then.
func Count(claims []*karpv1.NodeClaim) corev1.ResourceList {
	out := corev1.ResourceList{ResourceNodes: *resource.NewQuantity(int64(len(claims)), resource.DecimalSI)}
	for _, claim := range claims {
		scheduling.AddTo(out, claim.Status.Capacity)
	}
	return out
}
