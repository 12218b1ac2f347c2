package hash

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// Options are what the controller reads and writes.
type Options struct {
	NodePools   karpclient.NodePoolInterface
	NodeClaims  karpclient.NodeClaimInterface
	PoolLister  karplisters.NodePoolLister
	ClaimLister karplisters.NodeClaimLister
	PoolInform  cache.SharedIndexInformer
	ClaimInform cache.SharedIndexInformer
	Clock       clock.WithTicker
}

// Controller stamps each NodePool with its template hash, and re-stamps the pool's NodeClaims
// that carry a hash of another version (karpv1.NodePoolHashVersion). Such claims were launched
// by a Tailor that hashed differently: their hash cannot be compared, and calling them drifted
// would replace every node on an upgrade. Claims already Drifted keep their hash, so a real drift is not forgotten.
type Controller struct {
	opts  Options
	queue *controller.Queue
}

// NewController registers the event handlers; call it before the informers start.
func NewController(opts Options) (*Controller, error) {
	c := &Controller{opts: opts}
	c.queue = controller.NewQueue("nodepool-hash", opts.Clock, c.reconcile)
	enqueuePool := func(obj any) {
		if np, ok := obj.(*karpv1.NodePool); ok {
			c.queue.Add(np.Name)
		}
	}
	if _, err := opts.PoolInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueuePool, UpdateFunc: func(_, n any) { enqueuePool(n) },
	}); err != nil {
		return nil, err
	}
	// A claim that arrives with another hash version (made before an upgrade) is re-stamped too.
	_, err := opts.ClaimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if claim, ok := obj.(*karpv1.NodeClaim); ok && claim.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != karpv1.NodePoolHashVersion {
			if pool := claim.Labels[karpv1.NodePoolLabelKey]; pool != "" {
				c.queue.Add(pool)
			}
		}
	}})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1) }

func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	np, err := c.opts.PoolLister.Get(name)
	if err != nil || np.DeletionTimestamp != nil {
		return 0, nil
	}
	if !Stamped(np.Annotations, np) {
		if _, err := c.opts.NodePools.Patch(ctx, np.Name, types.MergePatchType, stampPatch(np), metav1.PatchOptions{}); err != nil {
			return 0, fmt.Errorf("stamping the template hash on NodePool %s: %w", np.Name, err)
		}
	}
	claims, err := c.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	for _, claim := range claims {
		if claim.Labels[karpv1.NodePoolLabelKey] != np.Name || claim.DeletionTimestamp != nil ||
			claim.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == karpv1.NodePoolHashVersion || claim.IsTrue(karpv1.ConditionTypeDrifted) {
			continue
		}
		if _, err := c.opts.NodeClaims.Patch(ctx, claim.Name, types.MergePatchType, stampPatch(np), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("re-stamping the NodePool hash on NodeClaim %s: %w", claim.Name, err)
		}
		klog.FromContext(ctx).Info("Re-stamped NodeClaim with the current NodePool hash version", "nodeClaim", claim.Name,
			"nodePool", np.Name, "was", claim.Annotations[karpv1.NodePoolHashVersionAnnotationKey], "version", karpv1.NodePoolHashVersion)
	}
	return 0, nil
}

// stampPatch is a merge patch that sets the pool's hash annotations and nothing else.
func stampPatch(np *karpv1.NodePool) []byte {
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": Stamp(nil, np)}})
	return data
}
