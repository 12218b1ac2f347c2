package provreq

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

var everything = labels.Everything()

// checkCapacity answers a check-capacity request: it is Provisioned, and its room booked, when
// every pod fits the nodes there are and the NodeClaims in flight, with the room pods and other
// bookings take counted; otherwise Provisioned=False says why, and it is checked again until it
// fits or expires. Nothing is launched for it.
func (c *Controller) checkCapacity(ctx context.Context, req *autoscalingv1.ProvisioningRequest, key string, pods []*corev1.Pod) (time.Duration, error) {
	now := c.opts.Clock.Now()
	changed := accept(req, now)
	plan, _, err := c.opts.Plan(ctx, pods, false)
	if err != nil {
		return 0, err
	}
	if len(plan.Unplaceable) == 0 && len(plan.Claims) == 0 {
		c.opts.Bookings.book(key, &booking{slots: slotsOf(plan, pods, nil)})
		provisioned(req, ReasonCapacityIsFound, fmt.Sprintf("All %d pods fit the nodes there are and those in flight; the capacity is booked for %s",
			len(pods), c.opts.BookingTime), now)
		klog.FromContext(ctx).V(1).Info("ProvisioningRequest capacity found", "provisioningRequest", key, "pods", len(pods))
		return c.opts.BookingTime, c.write(ctx, req)
	}
	if req.CreationTimestamp.Add(CheckCapacityExpiry).Before(now) {
		fail(req, ReasonExpired, fmt.Sprintf("No capacity was found for the request within %s of its creation", CheckCapacityExpiry), now)
		return 0, c.write(ctx, req)
	}
	msg := fmt.Sprintf("%d of %d pods fit no node there is or in flight: %s; Tailor checks again every %s",
		len(plan.Unplaceable), len(pods), whyUnplaced(plan.Unplaceable), CheckAgain)
	if notProvisioned(req, ReasonCapacityIsNotFound, msg, now) || changed {
		return CheckAgain, c.write(ctx, req)
	}
	return CheckAgain, nil
}

// whyUnplaced is the planner's explanation for the first pod it could not place, per NodePool: the
// pods of a request share a few shapes, so the first one speaks for the rest.
func whyUnplaced(unplaced []planner.Unplaceable) string {
	if len(unplaced) == 0 {
		return ""
	}
	u := unplaced[0]
	pools := make([]string, 0, len(u.Reasons))
	for pool := range u.Reasons {
		pools = append(pools, pool)
	}
	sort.Strings(pools)
	parts := make([]string, 0, len(pools))
	for _, pool := range pools {
		if pool == "" {
			parts = append(parts, u.Reasons[pool])
			continue
		}
		parts = append(parts, fmt.Sprintf("NodePool %q: %s", pool, u.Reasons[pool]))
	}
	if len(parts) == 0 {
		return "no node and no NodePool can hold it"
	}
	return fmt.Sprintf("pod %s: %s", u.Pod.Name, strings.Join(parts, "; "))
}

// slotsOf is where a plan put the request's pods: existing nodes, claims in flight, and the
// claims created for it (created maps a planned claim's index in plan.Claims to its NodeClaim).
func slotsOf(plan *planner.Plan, pods []*corev1.Pod, created map[int]string) []slot {
	byUID := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		byUID[p.UID] = p
	}
	var slots []slot
	for _, p := range pods {
		if node, ok := plan.FitsExistingOn[p.UID]; ok {
			slots = append(slots, slot{pod: p, node: node})
		}
	}
	claims := make([]string, 0, len(plan.InFlight))
	for claim := range plan.InFlight {
		claims = append(claims, claim)
	}
	sort.Strings(claims)
	for _, claim := range claims {
		for _, p := range plan.InFlight[claim] {
			if pod := byUID[p.UID]; pod != nil {
				slots = append(slots, slot{pod: pod, claim: claim})
			}
		}
	}
	for i, pc := range plan.Claims {
		name, ok := created[i]
		if !ok {
			continue
		}
		for _, p := range pc.Pods {
			if pod := byUID[p.UID]; pod != nil {
				slots = append(slots, slot{pod: pod, claim: name})
			}
		}
	}
	return slots
}
