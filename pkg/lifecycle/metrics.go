package lifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// recorder turns lifecycle steps into metrics; the durations come from the conditions' transition
// times, which survive a restart.
type recorder struct{ clock clock.PassiveClock }

func (c *Controller) metrics() recorder { return recorder{clock: c.opts.Clock} }

func pool(claim *karpv1.NodeClaim) string { return claim.Labels[karpv1.NodePoolLabelKey] }

func (recorder) Launched(claim *karpv1.NodeClaim) {
	metrics.NodeClaimsLaunched.WithLabelValues(pool(claim)).Inc()
}

func (recorder) Registered(claim *karpv1.NodeClaim) {
	metrics.NodeClaimsRegistered.WithLabelValues(pool(claim)).Inc()
	metrics.NodeCreated(pool(claim), claim.Labels[corev1.LabelTopologyZone])
	launched, registered := claim.GetCondition(karpv1.ConditionTypeLaunched), claim.GetCondition(karpv1.ConditionTypeRegistered)
	if launched != nil && registered != nil {
		metrics.LaunchToRegistered.WithLabelValues(pool(claim)).Observe(registered.LastTransitionTime.Sub(launched.LastTransitionTime.Time).Seconds())
	}
}

func (recorder) Initialized(claim *karpv1.NodeClaim) {
	metrics.NodeClaimsInitialized.WithLabelValues(pool(claim)).Inc()
	registered, initialized := claim.GetCondition(karpv1.ConditionTypeRegistered), claim.GetCondition(karpv1.ConditionTypeInitialized)
	if registered != nil && initialized != nil {
		metrics.RegisteredToInitialized.WithLabelValues(pool(claim)).Observe(initialized.LastTransitionTime.Sub(registered.LastTransitionTime.Time).Seconds())
	}
}

// Terminated counts a claim that is gone, with the reason recorded when it was deleted.
func (r recorder) Terminated(claim *karpv1.NodeClaim) {
	reason := "Deleted"
	if c := claim.GetCondition(karpv1.ConditionTypeDisruptionReason); c != nil && c.Reason != "" {
		reason = c.Reason
	}
	metrics.NodeClaimsTerminated.WithLabelValues(pool(claim), reason).Inc()
	var took time.Duration
	if claim.DeletionTimestamp != nil {
		took = r.clock.Since(claim.DeletionTimestamp.Time)
	}
	metrics.NodeClaimTerminated(pool(claim), claim.Labels[karpv1.CapacityTypeLabelKey], claim.Labels[corev1.LabelTopologyZone], took)
}
