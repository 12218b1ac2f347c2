package operator

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	corev1 "k8s.io/api/core/v1"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
	"github.com/tailor-sh/tailor/pkg/plugins/tailor"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/provreq"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// bookedPods is the pod lister the provisioner and the disruption loop read: the cluster's pods and
// the pods that stand for room booked for ProvisioningRequests. Call it with o.mu held, in Attach.
func (o *Operator) bookedPods(h fwk.Handle) corelisters.PodLister {
	if o.bookings == nil {
		o.bookings = provreq.NewBookings(o.claimLister, h.SharedInformerFactory().Core().V1().Nodes().Lister())
	}
	return o.bookings.BookedPods(h.SharedInformerFactory().Core().V1().Pods().Lister())
}

// buildProvisioningRequests builds the ProvisioningRequest controller on a planner of its own, if
// the API server serves the CRD: a cluster without it (the chart installs it only where it is
// absent, and other installs may leave it out) runs Tailor without the controller rather than an
// informer that fails to list forever. Call it before the informer factories start, as the
// simulator's plugins register informers.
func (o *Operator) buildProvisioningRequests(ctx context.Context, h fwk.Handle, profile *config.KubeSchedulerProfile, parallelism int) (*provreq.Controller, error) {
	_, err := h.ClientSet().Discovery().ServerResourcesForGroupVersion(autoscalingv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Info("The ProvisioningRequest CRD is not installed; ProvisioningRequests are not served")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("asking whether the API server serves %s: %w", autoscalingv1.SchemeGroupVersion, err)
	}
	sim, err := simulation.New(ctx, profile, simulation.DepsFromHandle(h, parallelism), tailor.Name)
	if err != nil {
		return nil, err
	}
	pl := planner.NewPlanner(sim)
	pl.SetMinValuesPolicy(planner.MinValuesPolicy(o.args.MinValuesPolicy))
	requests := o.informers.Autoscaling().V1().ProvisioningRequests()
	return provreq.New(provreq.Options{
		Requests:      o.clients.AutoscalingV1(),
		RequestLister: requests.Lister(),
		RequestInform: requests.Informer(),
		Templates:     h.SharedInformerFactory().Core().V1().PodTemplates().Lister(),
		NodeClaims:    o.clients.KarpenterV1().NodeClaims(),
		ClaimLister:   o.claimLister,
		ClaimInform:   o.claimInform,
		// The controller's queue has one worker, so its planner plans one request at a time.
		Plan: func(ctx context.Context, pods []*corev1.Pod, launch bool) (*planner.Plan, []string, error) {
			return o.provisioner.PlanApart(ctx, pl, pods, launch)
		},
		Bookings: o.bookings,
		Clock:    o.clock,
	})
}

// runProvisioningRequests starts the controller once its informers have synced; c may be nil (not
// served).
func (o *Operator) runProvisioningRequests(ctx context.Context, h fwk.Handle, c *provreq.Controller) error {
	if c == nil {
		return nil
	}
	o.informers.Start(ctx.Done())
	h.SharedInformerFactory().Start(ctx.Done())
	requests := o.informers.Autoscaling().V1().ProvisioningRequests().Informer()
	templates := h.SharedInformerFactory().Core().V1().PodTemplates().Informer()
	if !cache.WaitForCacheSync(ctx.Done(), requests.HasSynced, templates.HasSynced) {
		// Only a stop ends the wait unsynced: a replica stopped (or killed) while it started is
		// not a failure (TestFailoverKeepsConsolidateAfter crashed a leader 1.5 s after it began
		// to lead, on a loaded API server, and read this as the leader's error).
		return nil
	}
	o.wg.Go(func() { c.Run(ctx) })
	return nil
}
