package provreq

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// atomicScaleUp answers a best-effort-atomic-scale-up request: one plan places all its pods, on
// nodes there are, NodeClaims in flight and new NodeClaims, or nothing is launched and it is
// Failed with the planner's reason. Once launched, its room is booked at once, and it is
// Provisioned when every NodeClaim launched for it has initialized (its node Ready).
func (c *Controller) atomicScaleUp(ctx context.Context, req *autoscalingv1.ProvisioningRequest, key string, pods []*corev1.Pod) (time.Duration, error) {
	now := c.opts.Clock.Now()
	changed := accept(req, now)
	if bk := c.opts.Bookings.get(key); bk != nil {
		return c.awaitReady(ctx, req, key, bk, changed)
	}
	if claims := c.claimsFor(key); len(claims) > 0 {
		// Launched before a restart: book again over what was launched, then wait as before.
		plan, _, err := c.opts.Plan(ctx, pods, false)
		if err != nil {
			return 0, err
		}
		bk := &booking{slots: slotsOf(plan, pods, nil), claims: claims}
		c.opts.Bookings.book(key, bk)
		return c.awaitReady(ctx, req, key, bk, changed)
	}
	plan, held, err := c.opts.Plan(ctx, pods, true)
	if err != nil {
		return 0, err
	}
	if len(plan.Unplaceable) > 0 && len(held) > 0 {
		// A NodePool that cannot launch for now (its node class not ready yet, launches held back
		// after a failure) may hold the rest later: not an answer to fail the request on.
		msg := fmt.Sprintf("%d of %d pods cannot be placed while NodePools cannot launch (%s): %s; Tailor plans again every %s",
			len(plan.Unplaceable), len(pods), strings.Join(held, "; "), whyUnplaced(plan.Unplaceable), CheckAgain)
		if notProvisioned(req, ReasonCapacityIsNotFound, msg, now) || changed {
			return CheckAgain, c.write(ctx, req)
		}
		return CheckAgain, nil
	}
	if len(plan.Unplaceable) > 0 {
		fail(req, ReasonCapacityIsNotFound, fmt.Sprintf("%d of %d pods cannot be placed, so nothing was launched: %s",
			len(plan.Unplaceable), len(pods), whyUnplaced(plan.Unplaceable)), now)
		klog.FromContext(ctx).Info("ProvisioningRequest cannot be met; nothing launched", "provisioningRequest", key, "unplaceable", len(plan.Unplaceable))
		return 0, c.write(ctx, req)
	}
	created, err := c.launch(ctx, key, plan)
	if err != nil {
		return 0, err
	}
	bk := &booking{slots: slotsOf(plan, pods, created)}
	for _, name := range created {
		bk.claims = append(bk.claims, name)
	}
	c.opts.Bookings.book(key, bk)
	return c.awaitReady(ctx, req, key, bk, true)
}

// launch creates the plan's NodeClaims, each annotated with the request. All or none: if one
// create fails, those already created are deleted, and the error is returned to plan again.
func (c *Controller) launch(ctx context.Context, key string, plan *planner.Plan) (map[int]string, error) {
	created := map[int]string{}
	for i, pc := range plan.Claims {
		nc := planner.NewNodeClaim(pc)
		nc.Annotations[RequestAnnotationKey] = key
		got, err := c.opts.NodeClaims.Create(ctx, nc, metav1.CreateOptions{})
		if err != nil {
			names := make([]string, 0, len(created))
			for _, name := range created {
				names = append(names, name)
			}
			c.giveBack(ctx, names)
			return nil, fmt.Errorf("creating a NodeClaim in NodePool %q for ProvisioningRequest %s: %w", pc.NodePool.Name, key, err)
		}
		created[i] = got.Name
		// Counted as the provisioner's launches are, so the fleet's dashboards see these too.
		metrics.NodeClaimsCreated.WithLabelValues(pc.NodePool.Name, "provisioning").Inc()
		metrics.NodeClaimCreated(pc.NodePool.Name, "provisioned", got.Annotations[planner.MinValuesRelaxedAnnotationKey] == "true")
		klog.FromContext(ctx).Info("Launching NodeClaim for ProvisioningRequest", "nodeClaim", got.Name, "nodePool", pc.NodePool.Name,
			"provisioningRequest", key, "pods", len(pc.Pods))
	}
	return created, nil
}

// awaitReady makes a launched request Provisioned once all its claims have initialized. If one
// of them is gone first (its launch failed), the others are given back and the request is
// planned again: all of it or none.
func (c *Controller) awaitReady(ctx context.Context, req *autoscalingv1.ProvisioningRequest, key string, bk *booking, changed bool) (time.Duration, error) {
	now := c.opts.Clock.Now()
	var lost, waiting []string
	for _, name := range bk.claims {
		claim, err := c.opts.ClaimLister.Get(name)
		switch {
		case apierrors.IsNotFound(err) || err == nil && claim.DeletionTimestamp != nil:
			lost = append(lost, name)
		case err != nil:
			return 0, err
		case !claim.IsTrue(karpv1.ConditionTypeInitialized):
			waiting = append(waiting, name)
		}
	}
	if len(lost) > 0 {
		c.giveBack(ctx, bk.claims)
		c.opts.Bookings.release(key)
		notProvisioned(req, ReasonCapacityIsNotFound, fmt.Sprintf("NodeClaim %s launched for the request went away before its node was ready; "+
			"the others were given back and Tailor plans the request again", strings.Join(lost, ", ")), now)
		return CheckAgain, c.write(ctx, req)
	}
	if len(waiting) > 0 {
		if changed {
			return CheckAgain, c.write(ctx, req)
		}
		return CheckAgain, nil
	}
	if len(bk.claims) == 0 {
		// Nothing needed launching: as Cluster Autoscaler says when the pods fit as things are.
		provisioned(req, ReasonCapacityIsFound, fmt.Sprintf("All %d pods fit the nodes there are and those in flight; the capacity is booked for %s",
			len(bk.slots), c.opts.BookingTime), now)
		return c.opts.BookingTime, c.write(ctx, req)
	}
	provisioned(req, ReasonCapacityIsProvisioned, fmt.Sprintf("Capacity for all %d pods is there (%d NodeClaims launched for them are ready); it is booked for %s",
		len(bk.slots), len(bk.claims), c.opts.BookingTime), now)
	klog.FromContext(ctx).V(1).Info("ProvisioningRequest provisioned", "provisioningRequest", key, "nodeClaims", len(bk.claims))
	return c.opts.BookingTime, c.write(ctx, req)
}

// giveBack deletes the named NodeClaims; one already gone is no error.
func (c *Controller) giveBack(ctx context.Context, names []string) {
	for _, name := range names {
		if err := c.opts.NodeClaims.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Giving back a NodeClaim launched for a ProvisioningRequest", "nodeClaim", name)
		}
	}
}
