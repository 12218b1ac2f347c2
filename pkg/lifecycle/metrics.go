package lifecycle

import (
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// recorder turns lifecycle steps into metrics; the durations come from the conditions' transition
// times, which survive a restart.
type recorder struct{}

func (c *Controller) metrics() recorder { return recorder{} }

func pool(claim *karpv1.NodeClaim) string { return claim.Labels[karpv1.NodePoolLabelKey] }

func (recorder) Launched(claim *karpv1.NodeClaim) {
	metrics.NodeClaimsLaunched.WithLabelValues(pool(claim)).Inc()
}

func (recorder) Registered(claim *karpv1.NodeClaim) {
	metrics.NodeClaimsRegistered.WithLabelValues(pool(claim)).Inc()
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
func (recorder) Terminated(claim *karpv1.NodeClaim) {
	reason := "Deleted"
	if c := claim.GetCondition(karpv1.ConditionTypeDisruptionReason); c != nil && c.Reason != "" {
		reason = c.Reason
	}
	metrics.NodeClaimsTerminated.WithLabelValues(pool(claim), reason).Inc()
}
