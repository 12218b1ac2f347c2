package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Karpenter v1 counts a NodeClaim's launch, registration and initialization through its status
// conditions (operatorpkg's status controller, object "nodeclaim"): transitions by type, status
// and reason, with the NodeClaim's node class and NodePool labels as extra labels, named the way
// operatorpkg turns a label key into a metric label.
var claimLabelKeys = []string{awsv1.LabelNodeClass, karpv1.NodePoolLabelKey}

var claimExtraLabels = []string{"karpenter_k8s_aws_ec2nodeclass", "karpenter_sh_nodepool"}

var (
	kConditionTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "operator", Subsystem: "nodeclaim_status_condition",
		Name: "transitions_total", Help: "The count of transitions of a given object, type and status."},
		append([]string{"type", "status", "reason"}, claimExtraLabels...))
	kConditionTransitionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "operator", Subsystem: "nodeclaim_status_condition",
		Name: "transition_seconds", Help: "The amount of time a condition was in a given state before transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 15)}, append([]string{"type", "status"}, claimExtraLabels...))
	kClaimTermination = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "operator", Subsystem: "nodeclaim_termination",
		Name: "duration_seconds", Help: "The amount of time taken by an object to terminate completely.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 15)}, claimExtraLabels)

	conditionCount = prometheus.NewDesc("operator_nodeclaim_status_condition_count",
		"The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0",
		append([]string{"namespace", "name", "type", "status", "reason"}, claimExtraLabels...), nil)
	conditionCurrentSeconds = prometheus.NewDesc("operator_nodeclaim_status_condition_current_status_seconds",
		"The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes",
		append([]string{"namespace", "name", "type", "status", "reason"}, claimExtraLabels...), nil)
	terminationCurrentSeconds = prometheus.NewDesc("operator_nodeclaim_termination_current_time_seconds",
		"The current amount of time in seconds that an object has been in terminating state.",
		append([]string{"namespace", "name"}, claimExtraLabels...), nil)
)

func claimExtra(claim *karpv1.NodeClaim) []string {
	out := make([]string, len(claimLabelKeys))
	for i, k := range claimLabelKeys {
		out[i] = claim.Labels[k]
	}
	return out
}

// NodeClaimConditionsChanged counts the conditions whose status changed between old (nil for a
// NodeClaim first seen) and claim, and how long each held its old status. Like Karpenter's, the
// count is of what an informer saw: two writes between two events are one transition.
func NodeClaimConditionsChanged(old, claim *karpv1.NodeClaim) {
	extra := claimExtra(claim)
	for _, c := range claim.Status.Conditions {
		var was *metav1.Condition
		if old != nil {
			was = old.GetCondition(c.Type)
		}
		if was != nil && was.Status == c.Status {
			continue
		}
		kConditionTransitions.WithLabelValues(append([]string{c.Type, string(c.Status), c.Reason}, extra...)...).Inc()
		if was != nil {
			kConditionTransitionSeconds.WithLabelValues(append([]string{was.Type, string(was.Status)}, extra...)...).
				Observe(c.LastTransitionTime.Sub(was.LastTransitionTime.Time).Seconds())
		}
	}
}

// NodeClaimGone observes how long a deleted NodeClaim took to go, from its deletion timestamp.
func NodeClaimGone(claim *karpv1.NodeClaim, now time.Time) {
	if claim.DeletionTimestamp != nil {
		kClaimTermination.WithLabelValues(claimExtra(claim)...).Observe(now.Sub(claim.DeletionTimestamp.Time).Seconds())
	}
}

// collectClaims serves the per-NodeClaim condition gauges from the lister at scrape time.
func collectClaims(ch chan<- prometheus.Metric, claims []*karpv1.NodeClaim, now time.Time) {
	for _, claim := range claims {
		extra := claimExtra(claim)
		for _, c := range claim.Status.Conditions {
			labels := append([]string{claim.Namespace, claim.Name, c.Type, string(c.Status), c.Reason}, extra...)
			ch <- prometheus.MustNewConstMetric(conditionCount, prometheus.GaugeValue, 1, labels...)
			ch <- prometheus.MustNewConstMetric(conditionCurrentSeconds, prometheus.GaugeValue, now.Sub(c.LastTransitionTime.Time).Seconds(), labels...)
		}
		if claim.DeletionTimestamp != nil {
			ch <- prometheus.MustNewConstMetric(terminationCurrentSeconds, prometheus.GaugeValue, now.Sub(claim.DeletionTimestamp.Time).Seconds(),
				append([]string{claim.Namespace, claim.Name}, extra...)...)
		}
	}
}
