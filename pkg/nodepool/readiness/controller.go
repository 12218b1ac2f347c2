// Package readiness keeps each NodePool's NodeClassReady condition, and so its Ready, in step with
// its node class, as Karpenter's NodePool readiness controller does: a pool whose class cannot
// launch says so, with the class's reason, where `kubectl get nodepools` shows it.
package readiness

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/controller"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// Interval is how often a pool's node class is looked at again: node class changes raise no
// event on the pool, and the class's own status controller retries a not-ready class every
// minute, so this shows a fixed class within seconds of its status.
const Interval = 15 * time.Second

// Options are what the controller reads and writes. Cloud may not implement
// cloud.NodeClassReadiness; its pools' node classes are then Ready.
type Options struct {
	NodePools  karpclient.NodePoolInterface
	PoolLister karplisters.NodePoolLister
	PoolInform cache.SharedIndexInformer
	Cloud      cloud.CloudProvider
	Clock      clock.WithTicker
}

// Controller writes NodeClassReady and ValidationSucceeded on NodePools; Ready rolls up from them.
type Controller struct {
	opts  Options
	queue *controller.Queue
}

// New registers the event handlers; call it before the informer starts.
func New(opts Options) (*Controller, error) {
	c := &Controller{opts: opts}
	c.queue = controller.NewQueue("nodepool-readiness", opts.Clock, c.reconcile)
	enqueue := func(obj any) {
		if np, ok := obj.(*karpv1.NodePool); ok {
			c.queue.Add(np.Name)
		}
	}
	_, err := opts.PoolInform.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) }})
	return c, err
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1) }

func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	np, err := c.opts.PoolLister.Get(name)
	if err != nil || np.DeletionTimestamp != nil {
		return 0, nil
	}
	status, reason, message := metav1.ConditionTrue, "", ""
	if r, ok := c.opts.Cloud.(cloud.NodeClassReadiness); ok {
		var err error
		if status, reason, message, err = r.NodeClassReady(ctx, np.Spec.Template.Spec.NodeClassRef); err != nil {
			return 0, fmt.Errorf("NodePool %s: %w", name, err)
		}
	}
	np = np.DeepCopy()
	now := c.opts.Clock.Now()
	// The API server validated the spec against the CRD's schema and rules; Tailor has no
	// further runtime validation, so a stored pool is a valid one.
	changed := np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "", "", now)
	changed = np.SetCondition(karpv1.ConditionTypeNodeClassReady, status, reason, message, now) || changed
	if !changed {
		return Interval, nil
	}
	if _, err := c.opts.NodePools.UpdateStatus(ctx, np, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("writing NodePool %s status: %w", name, err)
	}
	if status != metav1.ConditionTrue {
		klog.FromContext(ctx).Info("NodePool is not Ready: its node class is not", "nodePool", name, "reason", reason, "message", message)
	}
	return Interval, nil
}
