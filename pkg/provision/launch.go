package provision

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// launch creates the plan's NodeClaims that still have a pod waiting for them, side by side, and
// tells each pod the claim it should schedule on. It returns what failed.
func (p *Provisioner) launch(ctx context.Context, plan *planner.Plan, view *planner.View) []string {
	leaving := make(map[types.UID]bool, len(view.Reschedulable))
	for _, pod := range view.Reschedulable {
		leaving[pod.UID] = true
	}
	plan.Claims = p.stillPending(ctx, plan.Claims, leaving)
	var errs []string
	// The claims are created side by side: a burst plans many, and each create is a round trip.
	var errMu sync.Mutex
	created := make([]*karpv1.NodeClaim, len(plan.Claims))
	workqueue.ParallelizeUntil(ctx, createWorkers, len(plan.Claims), func(i int) {
		var err error
		if created[i], err = p.create(ctx, plan.Claims[i]); err != nil {
			errMu.Lock()
			errs = append(errs, err.Error())
			errMu.Unlock()
		}
	})
	p.nominateSoon(ctx)
	// The pods' Events go out once every claim is created: a burst has one per pod, and they
	// would load the API server while the last creates are still on their way.
	for i, claim := range created {
		if claim == nil {
			continue
		}
		for _, pod := range plan.Claims[i].Pods {
			p.opts.Recorder.Eventf(pod, apis.ForEvents(claim), corev1.EventTypeNormal, "Nominated", "Provisioning",
				"Pod should schedule on: nodeclaim/%s", claim.Name)
		}
	}
	return errs
}

// create creates the NodeClaim for a planned claim and books its pods on it.
func (p *Provisioner) create(ctx context.Context, pc *planner.PlannedClaim) (*karpv1.NodeClaim, error) {
	created, err := p.opts.NodeClaims.Create(ctx, planner.NewNodeClaim(pc), metav1.CreateOptions{})
	if err != nil {
		p.noteCreateError(err)
		return nil, fmt.Errorf("creating a NodeClaim in NodePool %q for %d pods: %w", pc.NodePool.Name, len(pc.Pods), err)
	}
	metrics.NodeClaimsCreated.WithLabelValues(pc.NodePool.Name, "provisioning").Inc()
	metrics.NodeClaimCreated(pc.NodePool.Name, "provisioned", created.Annotations[planner.MinValuesRelaxedAnnotationKey] == "true")
	p.mu.Lock()
	for _, pod := range pc.Pods {
		p.planOnto(pod, created.Name)
	}
	p.awaited[created.Name] = p.opts.Clock.Now().Add(NominationWindow)
	p.created[created.Name] = createdClaim{claim: created, at: p.opts.Clock.Now()}
	p.launchedHere[created.Name] = p.opts.Clock.Now()
	p.noteLaunched(created.Name, pc.Pods)
	p.mu.Unlock()
	klog.FromContext(ctx).Info("Launching NodeClaim", "nodeClaim", created.Name, "nodePool", pc.NodePool.Name, "pods", len(pc.Pods),
		"cheapest", pc.Options[0].InstanceType.Name, "pricePerHour", pc.Options[0].Offering.PricePerHour, "options", len(pc.Options))
	if logger := klog.FromContext(ctx).V(3); logger.Enabled() {
		// What a plan settled the claim to, and for whom: the first thing to read when the
		// scheduler and the plan disagree about a pod.
		logger.Info("NodeClaim planned", "nodeClaim", created.Name, "pods", klog.KObjSlice(pc.Pods),
			"requirements", scheduling.NodeSelectorRequirements(created.Spec.Requirements))
	}
	return created, nil
}
