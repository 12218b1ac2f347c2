package aws

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/client"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// interruptionHandler acts on interruption notices as Karpenter does. The instance is going away
// whatever Tailor does, so there is no budget to respect: the NodeClaim is deleted at once, and
// the termination path that any deletion takes (taint, plan the pods' new capacity, drain through
// the Eviction API, terminate) replaces the node before EC2 reclaims it, two minutes after a spot
// notice. A spot notice also marks its offering unavailable, so the replacement goes elsewhere.
// A rebalance recommendation is only an Event: acting on every one would churn spot fleets.
//
// When the disruption loop lands, it can take over by consuming these events instead; until
// then this is the whole of interruption handling.
type interruptionHandler struct {
	p        *Provider
	claims   *client.Typed[*karpv1.NodeClaim]
	recorder events.EventRecorder
}

func (h *interruptionHandler) handle(ctx context.Context, ev interruption.Event) error {
	logger := klog.FromContext(ctx).WithValues("kind", ev.Kind, "instance", ev.InstanceID, "eventID", ev.MessageID)
	claim, err := h.claimOf(ctx, ev.InstanceID)
	if err != nil {
		return err // kept on the queue: it will be handled once the API server answers
	}
	defer func() {
		if h.p.opts.OnInterruption != nil {
			h.p.opts.OnInterruption(ctx, ev, claim)
		}
	}()
	if claim == nil {
		logger.Info("Interruption notice for an instance that is not Tailor's; ignoring")
		return nil
	}
	logger = logger.WithValues("nodeclaim", claim.Name, "node", claim.Status.NodeName)
	if ev.Kind == interruption.KindSpotInterruption {
		key := cloud.OfferingKey{InstanceType: claim.Labels[corev1.LabelInstanceTypeStable],
			Zone: claim.Labels[corev1.LabelTopologyZone], CapacityType: karpv1.CapacityTypeSpot}
		h.p.MarkOfferingUnavailable(key)
		logger.Info("Spot offering marked unavailable after an interruption notice", "instanceType", key.InstanceType, "zone", key.Zone)
	}
	if ev.Kind == interruption.KindRebalanceRecommendation {
		logger.Info("Rebalance recommendation; the instance keeps running")
		h.event(claim, corev1.EventTypeNormal, ev, "None", "EC2 recommends rebalancing spot instance %s away: it is at elevated risk of interruption", ev.InstanceID)
		return nil
	}
	if claim.DeletionTimestamp != nil {
		return nil // already leaving, e.g. a repeated notice
	}
	logger.Info("Deleting the NodeClaim of an interrupted instance", "deadline", ev.Deadline)
	h.event(claim, corev1.EventTypeWarning, ev, "Delete", "Deleting NodeClaim %s: %s for instance %s (by %s)",
		claim.Name, describeKind(ev.Kind), ev.InstanceID, ev.Deadline.UTC().Format("15:04:05 MST"))
	if err := h.claims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodeClaim %s: %w", claim.Name, err)
	}
	return nil
}

// claimOf finds the NodeClaim of the instance by provider ID. A list per notice is fine:
// notices are rare, and reading the API server (not a cache) avoids missing a claim launched
// a moment ago.
func (h *interruptionHandler) claimOf(ctx context.Context, instanceID string) (*karpv1.NodeClaim, error) {
	claims, _, err := h.claims.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	for _, c := range claims {
		if strings.HasSuffix(c.Status.ProviderID, "/"+instanceID) {
			return c, nil
		}
	}
	return nil, nil
}

func (h *interruptionHandler) event(claim *karpv1.NodeClaim, eventType string, ev interruption.Event, action, note string, args ...any) {
	if h.recorder != nil {
		h.recorder.Eventf(client.ForEvents(claim), nil, eventType, string(ev.Kind), action, note, args...)
	}
}

func describeKind(k interruption.Kind) string {
	switch k {
	case interruption.KindSpotInterruption:
		return "spot interruption notice"
	case interruption.KindScheduledChange:
		return "scheduled maintenance"
	case interruption.KindInstanceStopping:
		return "instance stopping"
	case interruption.KindInstanceTerminating:
		return "instance terminating"
	case interruption.KindCapacityReservationInterruption:
		return "capacity reservation reclaimed"
	}
	return string(k)
}
