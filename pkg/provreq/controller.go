// Package provreq serves Cluster Autoscaler's ProvisioningRequest API (autoscaling.x-k8s.io/v1),
// as Kueue's provisioning admission check uses it: a request names PodTemplates and counts, and
// Tailor answers in its status whether the pods fit the capacity there is (check-capacity) or
// launches capacity for all of them or none (best-effort atomic scale-up), then books that
// capacity for the pods that consume the request until the booking time has passed.
//
// Fit is the planner's answer, as for any pending pod: the request's pods are planned apart from
// the pending pods, over the cluster the provisioner's next plan sees (provision.PlanApart).
package provreq

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	autoscalingclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/autoscaling/v1"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	autoscalinglisters "github.com/tailor-sh/tailor/pkg/generated/listers/autoscaling/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// RequestAnnotationKey on a NodeClaim names the request (namespace/name) it was launched for, so
// that a restarted Tailor finds the claims it waits on.
const RequestAnnotationKey = "tailor.sh/provisioning-request"

// CheckAgain is how often a request whose capacity is not there (yet) is looked at again: room
// frees up and claims launch without an event on the request.
const CheckAgain = 30 * time.Second

// PlanFunc plans a request's pods over the cluster (provision.Provisioner.PlanApart with a planner
// of the controller's own); launch says whether new NodeClaims may be opened. held says why each
// NodePool that cannot launch for now was left out of the plan.
type PlanFunc func(ctx context.Context, pods []*corev1.Pod, launch bool) (plan *planner.Plan, held []string, err error)

// Options are what the controller reads and writes.
type Options struct {
	Requests      autoscalingclient.ProvisioningRequestsGetter
	RequestLister autoscalinglisters.ProvisioningRequestLister
	RequestInform cache.SharedIndexInformer
	Templates     corelisters.PodTemplateLister
	NodeClaims    karpclient.NodeClaimInterface
	ClaimLister   karplisters.NodeClaimLister
	ClaimInform   cache.SharedIndexInformer
	Plan          PlanFunc
	Bookings      *Bookings
	Clock         clock.WithTicker
	// BookingTime is how long capacity stays booked after Provisioned; 0 means DefaultBookingTime.
	BookingTime time.Duration
}

// Controller answers ProvisioningRequests of the classes Tailor serves.
type Controller struct {
	opts  Options
	queue *controller.Queue
}

// New registers the event handlers; call it before the informers start.
func New(opts Options) (*Controller, error) {
	if opts.BookingTime <= 0 {
		opts.BookingTime = DefaultBookingTime
	}
	c := &Controller{opts: opts}
	c.queue = controller.NewQueue("provisioningrequest", opts.Clock, c.reconcile)
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := opts.RequestInform.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue}); err != nil {
		return nil, err
	}
	// A claim launched for a request that becomes ready, or goes away, moves the request on.
	claimChanged := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if claim, ok := obj.(*karpv1.NodeClaim); ok && claim.Annotations[RequestAnnotationKey] != "" {
			c.queue.Add(claim.Annotations[RequestAnnotationKey])
		}
	}
	_, err := opts.ClaimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { claimChanged(obj) }, DeleteFunc: claimChanged})
	return c, err
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1) }

// reconcile takes one request a step: ignored if another autoscaler's class, released once done,
// expired once its booking time has passed, and otherwise answered by its class.
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	req, err := c.opts.RequestLister.ProvisioningRequests(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.opts.Bookings.release(key)
		return 0, nil
	}
	if err != nil || !served(req.Spec.ProvisioningClassName) {
		return 0, err
	}
	if finished(req) {
		c.opts.Bookings.release(key)
		return 0, nil
	}
	req = req.DeepCopy()
	now := c.opts.Clock.Now()
	if left, ok := bookingLeft(req, now, c.opts.BookingTime); ok {
		return c.keepBooked(ctx, req, key, left)
	}
	pods, err := podsOf(req, c.opts.Templates, now)
	var bad *badInput
	if errors.As(err, &bad) {
		fail(req, ReasonFailedToCreatePods, bad.msg, now)
		return 0, c.write(ctx, req)
	}
	if err != nil {
		return 0, err
	}
	if req.Spec.ProvisioningClassName == autoscalingv1.ProvisioningClassCheckCapacity {
		return c.checkCapacity(ctx, req, key, pods)
	}
	return c.atomicScaleUp(ctx, req, key, pods)
}

// keepBooked holds a Provisioned request's booking until its time is up, then releases it and
// says so. A booking this process does not hold (it restarted) is booked again where the pods
// still fit.
func (c *Controller) keepBooked(ctx context.Context, req *autoscalingv1.ProvisioningRequest, key string, left time.Duration) (time.Duration, error) {
	if left <= 0 {
		c.opts.Bookings.release(key)
		expire(req, c.opts.Clock.Now())
		klog.FromContext(ctx).V(1).Info("ProvisioningRequest booking expired", "provisioningRequest", key)
		return 0, c.write(ctx, req)
	}
	if c.opts.Bookings.get(key) == nil {
		pods, err := podsOf(req, c.opts.Templates, c.opts.Clock.Now())
		if err != nil {
			// A template gone after Provisioned leaves nothing to book again; the answer stands.
			klog.FromContext(ctx).V(1).Info("Cannot book a Provisioned request again", "provisioningRequest", key, "err", err)
			return left, nil
		}
		plan, _, err := c.opts.Plan(ctx, pods, false)
		if err != nil {
			return 0, err
		}
		c.opts.Bookings.book(key, &booking{slots: slotsOf(plan, pods, nil), claims: c.claimsFor(key)})
	}
	return left, nil
}

// write stores req's status.
func (c *Controller) write(ctx context.Context, req *autoscalingv1.ProvisioningRequest) error {
	if _, err := c.opts.Requests.ProvisioningRequests(req.Namespace).UpdateStatus(ctx, req, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of ProvisioningRequest %s/%s: %w", req.Namespace, req.Name, err)
	}
	return nil
}

// claimsFor returns the names of the live NodeClaims launched for the request.
func (c *Controller) claimsFor(key string) []string {
	claims, err := c.opts.ClaimLister.List(everything)
	if err != nil {
		return nil
	}
	var names []string
	for _, claim := range claims {
		if claim.Annotations[RequestAnnotationKey] == key && claim.DeletionTimestamp == nil {
			names = append(names, claim.Name)
		}
	}
	return names
}
