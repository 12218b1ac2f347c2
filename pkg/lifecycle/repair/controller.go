// Package repair replaces nodes that have been unhealthy for too long, as Karpenter's NodeRepair
// does: a node whose Ready condition (or a condition a cloud's repair policy names, such as the
// EKS node monitoring agent's) has been False or Unknown for longer than the policy tolerates is
// removed forcefully, past budgets and PodDisruptionBudgets, because a broken node will not drain
// on its own. Two guards hold it back when too many nodes fail at once (see Blocked). It is off
// unless the plugin arg nodeRepair is true, as Karpenter's feature gate is off by default.
package repair

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
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
	"github.com/tailor-sh/tailor/pkg/lifecycle/forceful"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// Method is the disruption reason repairs are counted and recorded under; also the reason of the
// Events on the Node and the NodeClaim.
const Method = "Unhealthy"

// BlockedReason is the reason of the Event that says a repair waits for the guards.
const BlockedReason = "NodeRepairBlocked"

// Recheck bounds how long the controller waits between looks at an unhealthy node, so that a
// clock that jumps (a test's, or after a suspend) or a guard that clears is noticed within it.
const Recheck = 10 * time.Second

// Options are what the controller reads and writes.
type Options struct {
	Nodes        corelisters.NodeLister
	NodeInformer cache.SharedIndexInformer
	ClaimLister  karplisters.NodeClaimLister
	NodeClaims   karpclient.NodeClaimInterface
	// Policies are the cloud's (cloud.RepairPoliciesOf).
	Policies  []cloud.RepairPolicy
	Disrupter *forceful.Disrupter
	// Recorder may be nil, in which case no Events are written.
	Recorder events.EventRecorder
	Clock    clock.WithTicker
}

// blockedEvery is how often a repair that stays blocked says so again: it is looked at every
// Recheck, and Karpenter writes its NodeRepairBlocked once every 15 minutes per object.
const blockedEvery = 15 * time.Minute

// Controller repairs unhealthy nodes that Tailor launched.
type Controller struct {
	opts  Options
	queue *controller.Queue
	// blockedSaid is when each node's NodeRepairBlocked was last written, by node name.
	mu          sync.Mutex
	blockedSaid map[string]time.Time
}

// New registers the event handlers; call it before the informers start.
func New(opts Options) (*Controller, error) {
	c := &Controller{opts: opts, blockedSaid: map[string]time.Time{}}
	c.queue = controller.NewQueue("repair", opts.Clock, c.reconcile)
	enqueue := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok && isUnhealthy(n, opts.Policies) {
			c.queue.Add(n.Name)
		}
	}
	_, err := opts.NodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) },
	})
	return c, err
}

// Run works the queue until ctx ends. One worker: each repair is weighed against the guards
// with the repairs before it already under way.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1) }

func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	node, err := c.opts.Nodes.Get(name)
	if err != nil || node.DeletionTimestamp != nil {
		return 0, nil
	}
	claim := c.claimOf(node)
	if claim == nil || claim.DeletionTimestamp != nil {
		return 0, nil // not Tailor's, or already going
	}
	finding, ok := Unhealthy(node, c.opts.Policies)
	if !ok {
		return 0, nil
	}
	now := c.opts.Clock.Now()
	if left := finding.Due.Sub(now); left > 0 {
		return min(left, Recheck), nil
	}
	nodes, err := c.opts.Nodes.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	pool := claim.Labels[karpv1.NodePoolLabelKey]
	if why := Blocked(nodes, pool, c.opts.Policies); why != "" {
		klog.FromContext(ctx).Info("Node repair blocked", "node", node.Name, "nodeClaim", claim.Name, "why", why)
		metrics.NodeRepairBlocked.WithLabelValues(pool).Inc()
		msg := fmt.Sprintf("Not repairing node %s: %s", node.Name, why)
		if c.sayBlocked(node.Name, now) {
			c.event(node, corev1.EventTypeWarning, BlockedReason, msg)
			c.event(apis.ForEvents(claim), corev1.EventTypeWarning, BlockedReason, msg)
		}
		return Recheck, nil
	}
	cond := finding.Condition
	msg := fmt.Sprintf("Node %s condition %s has been %s since %s (%s), longer than the %s the repair policy tolerates; replacing it",
		node.Name, cond.Type, cond.Status, cond.LastTransitionTime.UTC().Format(time.RFC3339), describe(cond), finding.Policy.Toleration)
	if err := c.opts.Disrupter.Disrupt(ctx, claim, forceful.Reason{Method: Method, Event: Method, Message: msg}); err != nil {
		return 0, err
	}
	// The deadline is written only once the claim is being deleted: written before, a failed or
	// cut-off Disrupt would leave it on a claim that lives on, and a later voluntary drain of the
	// node would skip its PodDisruptionBudgets. Should this write fail, the drain still goes on,
	// through the budgets.
	if err := c.annotateNow(ctx, claim, now); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Writing the repair's termination deadline; the drain honours PodDisruptionBudgets",
			"nodeClaim", claim.Name, "annotation", karpv1.NodeClaimTerminationTimestampAnnotationKey)
	}
	metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues(string(cond.Type), pool, claim.Labels[karpv1.CapacityTypeLabelKey]).Inc()
	metrics.NodeClaimUnhealthy(string(cond.Type), pool, claim.Labels[karpv1.CapacityTypeLabelKey], claim.Status.ImageID)
	return 0, nil
}

// annotateNow sets the claim's termination timestamp to now, so that its drain deletes pods at
// once instead of evicting them through PodDisruptionBudgets: the node cannot run them anyway,
// and a PDB counting them as healthy would keep the broken node forever.
func (c *Controller) annotateNow(ctx context.Context, claim *karpv1.NodeClaim, now time.Time) error {
	if v, ok := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil && !t.After(now) {
			return nil
		}
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, karpv1.NodeClaimTerminationTimestampAnnotationKey, now.UTC().Format(time.RFC3339))
	_, err := c.opts.NodeClaims.Patch(ctx, claim.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// claimOf is the NodeClaim the node registered for, matched by provider ID.
func (c *Controller) claimOf(node *corev1.Node) *karpv1.NodeClaim {
	if node.Spec.ProviderID == "" {
		return nil
	}
	claims, _ := c.opts.ClaimLister.List(labels.Everything()) // an informer's lister never fails
	for _, claim := range claims {
		if claim.Status.ProviderID == node.Spec.ProviderID {
			return claim
		}
	}
	return nil
}

// sayBlocked reports whether node's NodeRepairBlocked is due at now, and if so notes it written.
func (c *Controller) sayBlocked(node string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if said, ok := c.blockedSaid[node]; ok && now.Sub(said) < blockedEvery {
		return false
	}
	for n, said := range c.blockedSaid {
		if now.Sub(said) >= blockedEvery {
			delete(c.blockedSaid, n)
		}
	}
	c.blockedSaid[node] = now
	return true
}

func (c *Controller) event(regarding runtime.Object, eventType, reason, msg string) {
	if c.opts.Recorder != nil {
		c.opts.Recorder.Eventf(regarding, nil, eventType, reason, "Repair", "%s", msg)
	}
}

// describe is the condition's reason and message, as the kubelet or agent wrote them.
func describe(c corev1.NodeCondition) string {
	switch {
	case c.Reason != "" && c.Message != "":
		return c.Reason + ": " + c.Message
	case c.Reason != "":
		return c.Reason
	case c.Message != "":
		return c.Message
	}
	return "no reason given"
}
