// Package expiration replaces nodes whose NodeClaim has lived longer than its expireAfter, as
// Karpenter v1 does: forcefully, without budgets, so that an old node (an old image, a kernel
// long unpatched) cannot be kept forever by a budget or a PodDisruptionBudget that never frees
// up. PDBs still hold the drain until the claim's terminationGracePeriod runs out.
package expiration

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/lifecycle/forceful"
)

// Method is the disruption reason expirations are counted and recorded under.
const Method = "Expired"

// Recheck bounds how long the controller waits between looks at a claim that has not expired
// yet, so that a clock that jumps (a test's, or after a suspend) is noticed within it.
const Recheck = 10 * time.Second

// Options are what the controller reads and writes.
type Options struct {
	ClaimLister karplisters.NodeClaimLister
	ClaimInform cache.SharedIndexInformer
	Clock       clock.WithTicker
	Disrupter   *forceful.Disrupter
}

// Controller deletes expired NodeClaims.
type Controller struct {
	opts  Options
	queue *controller.Queue
}

// New registers the event handlers; call it before the informers start.
func New(opts Options) (*Controller, error) {
	c := &Controller{opts: opts}
	c.queue = controller.NewQueue("expiration", opts.Clock, c.reconcile)
	enqueue := func(obj any) {
		if claim, ok := obj.(*karpv1.NodeClaim); ok {
			c.queue.Add(claim.Name)
		}
	}
	_, err := opts.ClaimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) },
	})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1) }

func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	claim, err := c.opts.ClaimLister.Get(name)
	if err != nil || claim.DeletionTimestamp != nil {
		return 0, nil
	}
	left, expires := TimeLeft(claim, c.opts.Clock.Now())
	if !expires {
		return 0, nil
	}
	if left > 0 {
		return min(left, Recheck), nil
	}
	klog.FromContext(ctx).Info("NodeClaim expired", "nodeClaim", claim.Name, "expireAfter", claim.Spec.ExpireAfter.String())
	launched := claim.GetCondition(karpv1.ConditionTypeLaunched).LastTransitionTime
	msg := fmt.Sprintf("NodeClaim %s expired: launched %s, expireAfter %s", claim.Name,
		launched.UTC().Format(time.RFC3339), claim.Spec.ExpireAfter.String())
	return 0, c.opts.Disrupter.Disrupt(ctx, claim, forceful.Reason{Method: Method, Event: Method, Message: msg})
}

// TimeLeft is how long the claim has until it expires; expires is false when its expireAfter
// is Never or it never launched (the registration timeout deals with those).
//
// The age counts from the claim's launch as Tailor's own clock stamped it on the Launched
// condition, not from its creationTimestamp, which is the API server's clock: clock skew between
// the two must not expire claims early, or, as soon as Tailor's clock runs ahead, expire each
// replacement as soon as it is made. The two differ by the seconds a launch takes.
func TimeLeft(claim *karpv1.NodeClaim, now time.Time) (left time.Duration, expires bool) {
	launched := claim.GetCondition(karpv1.ConditionTypeLaunched)
	if claim.Spec.ExpireAfter.IsNever() || launched == nil || launched.Status != metav1.ConditionTrue {
		return 0, false
	}
	return launched.LastTransitionTime.Add(*claim.Spec.ExpireAfter.Duration).Sub(now), true
}
