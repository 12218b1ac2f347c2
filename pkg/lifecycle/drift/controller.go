package drift

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/controller"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// Recheck is how often a claim is looked at again without an event, as Karpenter does: the
// cloud's side (a new image, a changed subnet) raises no event in the cluster.
const Recheck = 5 * time.Minute

// Options are what the controller reads and writes.
type Options struct {
	NodeClaims  karpclient.NodeClaimInterface
	ClaimLister karplisters.NodeClaimLister
	PoolLister  karplisters.NodePoolLister
	ClaimInform cache.SharedIndexInformer
	PoolInform  cache.SharedIndexInformer
	Cloud       cloud.CloudProvider
	// Recorder may be nil, in which case no Events are written.
	Recorder events.EventRecorder
	Clock    clock.WithTicker
}

// Controller sets and clears the Drifted condition of launched NodeClaims.
type Controller struct {
	opts  Options
	queue *controller.Queue
}

// New registers the event handlers; call it before the informers start.
func New(opts Options) (*Controller, error) {
	c := &Controller{opts: opts}
	c.queue = controller.NewQueue("drift", opts.Clock, c.reconcile)
	if _, err := opts.ClaimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if claim, ok := obj.(*karpv1.NodeClaim); ok {
				c.queue.Add(claim.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*karpv1.NodeClaim)
			claim, ok2 := newObj.(*karpv1.NodeClaim)
			// Only what drift depends on: status-only updates (conditions, this controller's own
			// writes) would otherwise ask the cloud again for nothing.
			if ok1 && ok2 && (!maps.Equal(old.Labels, claim.Labels) || !maps.Equal(old.Annotations, claim.Annotations) ||
				old.IsTrue(karpv1.ConditionTypeLaunched) != claim.IsTrue(karpv1.ConditionTypeLaunched)) {
				c.queue.Add(claim.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	_, err := opts.PoolInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, n any) {
			if np, ok := n.(*karpv1.NodePool); ok {
				c.enqueueClaims(func(claim *karpv1.NodeClaim) bool { return claim.Labels[karpv1.NodePoolLabelKey] == np.Name })
			}
		},
	})
	return c, err
}

// NodeClassChanged re-checks the claims launched from the named node class, whose spec or
// resolved status (images, subnets, security groups) changed.
func (c *Controller) NodeClassChanged(name string) {
	c.enqueueClaims(func(claim *karpv1.NodeClaim) bool {
		return claim.Spec.NodeClassRef != nil && claim.Spec.NodeClassRef.Name == name
	})
}

func (c *Controller) enqueueClaims(match func(*karpv1.NodeClaim) bool) {
	claims, _ := c.opts.ClaimLister.List(labels.Everything()) // an informer's lister never fails
	for _, claim := range claims {
		if match(claim) {
			c.queue.Add(claim.Name)
		}
	}
}

// Run works the queue until ctx ends. Cloud drift checks can be slow; a few workers keep one
// from holding up the rest.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 2) }

func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	claim, err := c.opts.ClaimLister.Get(name)
	if err != nil || claim.DeletionTimestamp != nil {
		return 0, nil
	}
	claim = claim.DeepCopy()
	if !claim.IsTrue(karpv1.ConditionTypeLaunched) {
		// Nothing launched cannot have drifted; a claim is launched only once, so a stale
		// condition is all there can be to clear.
		if claim.ClearCondition(karpv1.ConditionTypeDrifted) {
			_, err := c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
			return 0, err
		}
		return 0, nil
	}
	pool, err := c.opts.PoolLister.Get(claim.Labels[karpv1.NodePoolLabelKey])
	if err != nil {
		// A claim without its pool is garbage-collected with it; judging it against nothing
		// would say nothing useful.
		return 0, nil
	}
	found, err := c.find(ctx, claim, pool)
	if err != nil {
		return 0, fmt.Errorf("checking NodeClaim %s for drift: %w", claim.Name, err)
	}
	changed := false
	if found != nil {
		changed = claim.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, found.Reason, found.Message, c.opts.Clock.Now())
	} else {
		changed = claim.ClearCondition(karpv1.ConditionTypeDrifted)
	}
	if !changed {
		return Recheck, nil
	}
	if _, err := c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return 0, err
	}
	logger := klog.FromContext(ctx).WithValues("nodeClaim", claim.Name)
	if found != nil {
		logger.Info("NodeClaim drifted", "reason", found.Reason, "message", found.Message)
		if c.opts.Recorder != nil {
			c.opts.Recorder.Eventf(apis.ForEvents(claim), nil, corev1.EventTypeNormal, "Drifted", "Drift", "%s: %s", found.Reason, found.Message)
		}
	} else {
		logger.Info("NodeClaim no longer drifted")
	}
	return Recheck, nil
}

// find runs the checks in Karpenter's order, cheapest first; the first that applies is the
// reason.
func (c *Controller) find(ctx context.Context, claim *karpv1.NodeClaim, pool *karpv1.NodePool) (*Finding, error) {
	if f := Static(claim, pool); f != nil {
		return f, nil
	}
	if f := Requirements(claim, pool); f != nil {
		return f, nil
	}
	done := metrics.CloudCall("nodeclaim.disruption", "GetInstanceTypes", c.opts.Cloud)
	types, err := c.opts.Cloud.InstanceTypes(ctx, pool)
	done(err)
	if err != nil {
		return nil, err
	}
	if f := InstanceType(claim, pool, types); f != nil {
		return f, nil
	}
	done = metrics.CloudCall("nodeclaim.disruption", "IsDrifted", c.opts.Cloud)
	reason, err := c.opts.Cloud.IsDrifted(ctx, claim)
	done(err)
	if err != nil || reason == "" {
		return nil, err
	}
	return &Finding{string(reason), fmt.Sprintf("the cloud reports %s: the instance no longer matches its node class", reason)}, nil
}
