// Package lifecycle carries a NodeClaim from creation to a Ready node and back to nothing:
// launch through the CloudProvider, registration of its Node, initialization, and termination.
// Each step reads the NodeClaim and its Node, decides, writes once, and requeues.
package lifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
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

// Options are what the controller reads and writes.
type Options struct {
	Kube         kubernetes.Interface
	NodeClaims   karpclient.NodeClaimInterface
	ClaimLister  karplisters.NodeClaimLister
	ClaimInform  cache.SharedIndexInformer
	NodeInformer cache.SharedIndexInformer
	Nodes        corelisters.NodeLister
	Cloud        cloud.CloudProvider
	Recorder     events.EventRecorder
	Clock        clock.WithTicker
	// Replan is called when a claim goes away before it served its pods, so they are planned
	// again at once.
	Replan func()
	// DeviceClasses and ResourceSlices, when set, let a claim launched for an extended resource
	// that a DeviceClass backs with DRA devices initialize once its node publishes devices, since
	// the node never advertises the resource itself.
	DeviceClasses  resourcelisters.DeviceClassLister
	ResourceSlices resourcelisters.ResourceSliceLister
	// Backoff, when set, holds back the NodePool and node class of a claim whose launch failed
	// permanently, so the replan does not launch the same failure again at once.
	Backoff *cloud.LaunchBackoff
}

// Controller reconciles NodeClaims.
type Controller struct {
	opts  Options
	queue *controller.Queue
	// written are the claims as the informer has them, or as this controller last wrote them
	// when that is newer (see writtenClaims).
	written *writtenClaims
}

const providerIDIndex = "providerID"

// New registers the controller's event handlers; call it before the informers start.
func New(opts Options) (*Controller, error) {
	c := &Controller{opts: opts, written: newWritten(opts.ClaimInform.GetStore(), opts.Clock.Now)}
	c.opts.NodeClaims = recordingClaims{NodeClaimInterface: opts.NodeClaims, written: c.written}
	c.queue = controller.NewQueue("lifecycle", opts.Clock, c.reconcile)
	if err := opts.NodeInformer.AddIndexers(cache.Indexers{providerIDIndex: func(obj any) ([]string, error) {
		if n, ok := obj.(*corev1.Node); ok && n.Spec.ProviderID != "" {
			return []string{n.Spec.ProviderID}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing nodes by provider ID: %w", err)
	}
	enqueueClaim := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if claim, ok := obj.(*karpv1.NodeClaim); ok {
			c.queue.Add(claim.Name)
		}
	}
	if _, err := opts.ClaimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueClaim, DeleteFunc: enqueueClaim,
		UpdateFunc: func(o, n any) {
			if old, ok := o.(*karpv1.NodeClaim); ok {
				if cur, ok := n.(*karpv1.NodeClaim); ok {
					recordTransitions(opts.Recorder, old, cur)
				}
			}
			enqueueClaim(n)
		},
	}); err != nil {
		return nil, err
	}
	enqueueOwner := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if n, ok := obj.(*corev1.Node); ok {
			if claim := c.claimForNode(n); claim != nil {
				c.queue.Add(claim.Name)
			}
		}
	}
	if _, err := opts.NodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueOwner, UpdateFunc: func(_, n any) { enqueueOwner(n) }, DeleteFunc: enqueueOwner,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run works the queue until ctx ends. Cloud calls can be slow; several workers keep one slow
// launch from holding up registration of others.
func (c *Controller) Run(ctx context.Context, workers int) { c.queue.Run(ctx, workers) }

// reconcile moves the claim one or more steps along; it returns when to look again.
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	claim, ok := c.claim(name)
	if !ok {
		return 0, nil
	}
	claim = claim.DeepCopy()
	if claim.DeletionTimestamp != nil {
		return c.finalize(ctx, claim)
	}
	if !hasFinalizer(claim.Finalizers, karpv1.TerminationFinalizer) {
		claim.Finalizers = append(claim.Finalizers, karpv1.TerminationFinalizer)
		_, err := c.opts.NodeClaims.Update(ctx, claim, metav1.UpdateOptions{})
		return 0, err // the update brings the claim back through the queue
	}
	if !claim.IsTrue(karpv1.ConditionTypeRegistered) {
		left := c.registrationTimeLeft(claim)
		if left <= 0 {
			return 0, c.expire(ctx, claim)
		}
		step := c.register
		if !claim.IsTrue(karpv1.ConditionTypeLaunched) {
			step = c.launch
		}
		requeue, err := step(ctx, claim)
		if err != nil {
			return 0, err
		}
		// Look again before the TTL runs out, and often enough to notice a clock that moved.
		if requeue == 0 {
			requeue = livenessRecheck
		}
		return min(requeue, left, livenessRecheck), nil
	}
	if !claim.IsTrue(karpv1.ConditionTypeInitialized) {
		return c.initialize(ctx, claim)
	}
	return 0, nil
}

// claimForNode finds the NodeClaim whose instance the node runs on.
func (c *Controller) claimForNode(n *corev1.Node) *karpv1.NodeClaim {
	if n.Spec.ProviderID == "" {
		return nil
	}
	claims, _ := c.opts.ClaimLister.List(labels.Everything()) // an informer's lister never fails
	for _, claim := range claims {
		if claim.Status.ProviderID == n.Spec.ProviderID {
			return claim
		}
	}
	return nil
}

// nodeForClaim finds the Node that registered for the claim's instance.
func (c *Controller) nodeForClaim(claim *karpv1.NodeClaim) (*corev1.Node, error) {
	if claim.Status.ProviderID == "" {
		return nil, nil
	}
	objs, err := c.opts.NodeInformer.GetIndexer().ByIndex(providerIDIndex, claim.Status.ProviderID)
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	if len(objs) > 1 {
		return nil, fmt.Errorf("%d nodes claim provider ID %s of NodeClaim %s", len(objs), claim.Status.ProviderID, claim.Name)
	}
	return objs[0].(*corev1.Node), nil
}

func hasFinalizer(finalizers []string, f string) bool {
	for _, x := range finalizers {
		if x == f {
			return true
		}
	}
	return false
}

// RegistrationTTL is how long a NodeClaim may take from creation to its Node registering before it
// is deleted and its pods planned again, as in Karpenter.
const RegistrationTTL = 15 * time.Minute

// registrationTimeLeft is how long the claim's node still has to register. The clock starts at the
// first launch attempt, stamped by Tailor's own clock in the Launched condition, so that skew
// between Tailor and the API server cannot expire a claim early.
func (c *Controller) registrationTimeLeft(claim *karpv1.NodeClaim) time.Duration {
	launched := claim.GetCondition(karpv1.ConditionTypeLaunched)
	if launched == nil {
		return RegistrationTTL
	}
	return RegistrationTTL - c.opts.Clock.Since(launched.LastTransitionTime.Time)
}

// livenessRecheck bounds how long an unregistered claim waits between looks.
const livenessRecheck = 10 * time.Second

// expire deletes a claim whose node never registered, saying why on the claim and in an Event.
func (c *Controller) expire(ctx context.Context, claim *karpv1.NodeClaim) error {
	msg := fmt.Sprintf("the Node did not register within %s of the NodeClaim's creation", RegistrationTTL)
	claim.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, "Liveness", msg, c.opts.Clock.Now())
	if _, err := c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.opts.Recorder.Eventf(apis.ForEvents(claim), nil, corev1.EventTypeWarning, "NotRegistered", "Delete", "Deleting NodeClaim %s: %s", claim.Name, msg)
	klog.FromContext(ctx).Info("Deleting NodeClaim whose node never registered", "nodeClaim", claim.Name, "ttl", RegistrationTTL)
	if err := c.opts.NodeClaims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	metrics.NodeClaimDisrupted(claim, "registration_timeout", "") // Karpenter's reason for the same
	c.opts.Replan()
	return nil
}
