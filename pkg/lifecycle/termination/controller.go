// Package termination drains and removes nodes that Tailor launched. Deleting a Node or its
// NodeClaim ends here: the node is tainted karpenter.sh/disrupted, its pods are evicted through
// the Eviction API (so PodDisruptionBudgets hold) until the NodePool's terminationGracePeriod
// runs out, volumes detach, the instance is terminated, and only then is the finalizer dropped.
package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/controller"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Options are what the controller reads and writes.
type Options struct {
	Kube              kubernetes.Interface
	NodeClaims        karpclient.NodeClaimInterface
	ClaimLister       karplisters.NodeClaimLister
	NodeInformer      cache.SharedIndexInformer
	PodInformer       cache.SharedIndexInformer
	VolumeAttachments storagelisters.VolumeAttachmentLister
	// PVCs, when set, lets the wait for volumes leave out those of pods the drain does not wait
	// for (see attachedVolumes).
	PVCs  corelisters.PersistentVolumeClaimLister
	Nodes corelisters.NodeLister
	// PDBs, when set, lets a drain finish an eviction a budget granted whose pod was never
	// deleted (see grantedEviction).
	PDBs     policylisters.PodDisruptionBudgetLister
	Cloud    cloud.CloudProvider
	Recorder events.EventRecorder
	Clock    clock.WithTicker
	// Metrics, when set, hears of each eviction and each terminated node.
	Metrics Metrics
	// Placer, when set, is asked just before each eviction whether the pods would find a place
	// afterwards; the drain holds the evictions of those that would not (see Placer).
	Placer Placer
}

// Placer re-checks evictions against the cluster as it is now. Unplaceable returns, for pods
// about to be evicted from node, why each that would fit nowhere afterwards would not (the
// disruption loop's Controller is one). An error holds no eviction: it is logged.
type Placer interface {
	Unplaceable(ctx context.Context, node string, pods []*corev1.Pod) (map[types.UID]string, error)
}

// Metrics receives what the controller does; the operator counts it.
type Metrics interface {
	Evicted(outcome string)
	Terminated(node *corev1.Node, took time.Duration)
}

// Controller drains and terminates nodes that are being deleted.
type Controller struct {
	opts  Options
	queue *controller.Queue
	// rechecks are the drains' last placement re-checks, by node (see recheckCache).
	rechecks recheckCache
}

const podsByNodeIndex = "tailor.spec.nodeName"

// New registers the controller's event handlers and indexes; call it before informers start.
func New(opts Options) (*Controller, error) {
	c := &Controller{opts: opts}
	c.queue = controller.NewQueue("termination", opts.Clock, c.reconcile)
	if err := opts.PodInformer.AddIndexers(cache.Indexers{podsByNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing pods by node: %w", err)
	}
	if _, err := opts.NodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNode,
		UpdateFunc: func(_, n any) { c.enqueueNode(n) },
	}); err != nil {
		return nil, err
	}
	// A drain waits for its pods: for an eviction to be accepted before it evicts the next group,
	// and for the last pod to go before it terminates the instance. The pod's own event wakes
	// it, rather than a poll every second of every node being drained.
	_, err := opts.PodInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			old, ok1 := o.(*corev1.Pod)
			pod, ok2 := n.(*corev1.Pod)
			if ok1 && ok2 && leftDrain(old, pod) {
				c.enqueueNodeOf(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				c.enqueueNodeOf(pod)
			}
		},
	})
	return c, err
}

func (c *Controller) enqueueNode(obj any) {
	if n, ok := obj.(*corev1.Node); ok && n.DeletionTimestamp != nil && hasFinalizer(n.Finalizers) {
		c.queue.Add(n.Name)
	}
}

// leftDrain reports whether a pod's update moves its node's drain along: the pod no longer needs
// eviction (its eviction was accepted), or no longer holds the node (it finished).
func leftDrain(old, pod *corev1.Pod) bool {
	return (holdsNode(old) && !holdsNode(pod)) || (scheduling.NeedsEviction(old) && !scheduling.NeedsEviction(pod))
}

// enqueueNodeOf queues the node pod ran on if that node is being terminated.
func (c *Controller) enqueueNodeOf(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	if n, err := c.opts.Nodes.Get(pod.Spec.NodeName); err == nil {
		c.enqueueNode(n)
	}
}

// Requeue delays of a drain. A PodDisruptionBudget that refuses an eviction says nothing when it
// would allow it, so the eviction is asked again soon. Pods that were evicted or are leaving
// bring their node back with their own events (see leftDrain); the longer poll is only a safety
// net.
const (
	evictionBlockedRetry = time.Second
	podsLeavingPoll      = 10 * time.Second
	// placementRetry is how soon evictions held for want of a place are re-checked: each check
	// is a plan, and what gives a pod a place (a node launched, a pod gone) takes seconds.
	placementRetry = 5 * time.Second
)

// Run works the queue until ctx ends. Several workers keep one slow drain from holding up others.
func (c *Controller) Run(ctx context.Context, workers int) { c.queue.Run(ctx, workers) }

// reconcile takes the node one step towards gone and says when to look again.
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	node, err := c.opts.Nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil || node.DeletionTimestamp == nil || !hasFinalizer(node.Finalizers) {
		return 0, err
	}
	logger := klog.FromContext(ctx).WithValues("node", node.Name)
	claim := c.claimFor(node)
	if claim != nil && claim.DeletionTimestamp == nil {
		// The claim follows its node: it must not outlive the instance it stands for.
		if err := c.opts.NodeClaims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	if err := c.taint(ctx, node); err != nil {
		return 0, err
	}
	deadline := terminationDeadline(node, claim)
	pods, err := c.podsOn(node.Name)
	if err != nil {
		return 0, err
	}
	now := c.opts.Clock.Now()
	if remaining := stillRunning(pods, now); len(remaining) > 0 {
		again, err := c.drain(ctx, node, claim, pods, deadline)
		if err != nil {
			return 0, err
		}
		if again > 0 {
			return again, nil
		}
		return podsLeavingPoll, nil
	}
	if claim != nil {
		wasDrained := claim.IsTrue(karpv1.ConditionTypeDrained)
		if err := c.setCondition(ctx, claim, karpv1.ConditionTypeDrained, metav1.ConditionTrue, "Drained", ""); err != nil {
			return 0, err
		}
		if !wasDrained { // once per node, as Karpenter counts it: when Drained turns True
			metrics.NodeDrained(node.Labels[karpv1.NodePoolLabelKey])
		}
	}
	pastDeadline := deadline != nil && !now.Before(*deadline)
	if attached := c.attachedVolumes(node.Name, pods, now); len(attached) > 0 && !pastDeadline {
		logger.V(1).Info("Waiting for volumes to detach", "volumeAttachments", attached)
		if claim != nil {
			_ = c.setCondition(ctx, claim, karpv1.ConditionTypeVolumesDetached, metav1.ConditionFalse, "AwaitingVolumeDetachment",
				fmt.Sprintf("%d VolumeAttachments still name node %s", len(attached), node.Name))
		}
		return time.Second, nil
	}
	if done, err := c.terminateInstance(ctx, node, claim); err != nil || !done {
		return time.Second, err
	}
	if removed, err := removeFinalizer(ctx, c.opts.Kube, node); err != nil || !removed {
		// Not removed: an earlier pass did, and the cache had not caught up. It is counted once.
		return 0, err
	}
	logger.Info("Node terminated")
	if c.opts.Metrics != nil {
		c.opts.Metrics.Terminated(node, c.opts.Clock.Since(node.DeletionTimestamp.Time))
	}
	return 0, nil
}

// terminationDeadline is when the drain stops respecting PDBs: the NodeClaim's
// terminationGracePeriod after the node (or its claim, if earlier) began to be deleted, or the
// claim's karpenter.sh/nodeclaim-termination-timestamp if that is earlier (node repair sets it to
// the moment it gives up on the node).
func terminationDeadline(node *corev1.Node, claim *karpv1.NodeClaim) *time.Time {
	if claim == nil {
		return nil
	}
	var deadline *time.Time
	if claim.Spec.TerminationGracePeriod != nil {
		start := node.DeletionTimestamp.Time
		if claim.DeletionTimestamp != nil && claim.DeletionTimestamp.Before(node.DeletionTimestamp) {
			start = claim.DeletionTimestamp.Time
		}
		d := start.Add(claim.Spec.TerminationGracePeriod.Duration)
		deadline = &d
	}
	if v, ok := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil && (deadline == nil || t.Before(*deadline)) {
			deadline = &t
		}
	}
	return deadline
}

func (c *Controller) podsOn(node string) ([]*corev1.Pod, error) {
	objs, err := c.opts.PodInformer.GetIndexer().ByIndex(podsByNodeIndex, node)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	return pods, nil
}

func (c *Controller) claimFor(node *corev1.Node) *karpv1.NodeClaim {
	claims, _ := c.opts.ClaimLister.List(labels.Everything()) // an informer's lister never fails
	for _, claim := range claims {
		if node.Spec.ProviderID != "" && claim.Status.ProviderID == node.Spec.ProviderID {
			return claim
		}
	}
	return nil
}

func hasFinalizer(finalizers []string) bool {
	for _, f := range finalizers {
		if f == karpv1.TerminationFinalizer {
			return true
		}
	}
	return false
}
