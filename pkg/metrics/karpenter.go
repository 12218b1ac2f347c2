package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Karpenter's metrics, by the names, label names and label values its reference documents
// (sigs.k8s.io/karpenter pkg/metrics and its controllers' metrics.go), so that the dashboards and
// alerts a team wrote for Karpenter keep working. They count the same events as Tailor's own
// tailor_* metrics, which stay for Tailor's dashboard; docs/reference/karpenter-metrics.md lists
// each and what Tailor serves for it.
const karpenterNamespace = "karpenter"

// karpenterDurationBuckets are Karpenter's duration buckets, so quantiles over them read alike.
var karpenterDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45,
	0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25,
	30, 40, 50, 60, 120, 150, 300, 450, 600}

// karpenterObjectives are the quantiles Karpenter's summaries serve (min, p50, p90, p99, max): its
// performance dashboard queries them by the quantile label.
var karpenterObjectives = map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01}

func counter(subsystem, name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: karpenterNamespace, Subsystem: subsystem, Name: name, Help: help}, labels)
}

var (
	kNodeClaimsCreated = counter("nodeclaims", "created_total",
		"Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created, the owning nodepool, and if min values was relaxed for this nodeclaim.",
		"reason", "nodepool", "min_values_relaxed")
	kNodeClaimsTerminated = counter("nodeclaims", "terminated_total",
		"Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, capacity type, and zone.",
		"nodepool", "capacity_type", "zone")
	kNodeClaimsDisrupted = counter("nodeclaims", "disrupted_total",
		"Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was disrupted, the owning nodepool, the capacity type, the consolidation policy, and the termination mode.",
		"reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode")
	kNodeClaimsUnhealthyDisrupted = counter("nodeclaims", "unhealthy_disrupted_total",
		"Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on the node was disrupted, the owning nodepool, and the image ID.",
		"condition", "nodepool", "capacity_type", "image_id")
	kNodeClaimTermination = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: karpenterNamespace, Subsystem: "nodeclaims",
		Name: "termination_duration_seconds", Help: "Duration of NodeClaim termination in seconds.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12)}, []string{"nodepool"})
	kNodesCreated = counter("nodes", "created_total",
		"Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.", "nodepool", "zone")
	kNodesTerminated = counter("nodes", "terminated_total",
		"Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.", "nodepool", "zone")
	kNodesDrained    = counter("nodes", "drained_total", "The total number of nodes drained by Karpenter", "nodepool")
	kNodeTermination = prometheus.NewSummaryVec(prometheus.SummaryOpts{Namespace: karpenterNamespace, Subsystem: "nodes",
		Name: "termination_duration_seconds", Help: "The time taken between a node's deletion request and the removal of its finalizer",
		Objectives: karpenterObjectives}, []string{"nodepool"})
	kNodeLifetime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: karpenterNamespace, Subsystem: "nodes",
		Name: "lifetime_duration_seconds", Help: "The lifetime duration of the nodes since creation.",
		Buckets: []float64{900, 1800, 2700, 3600, 7200, 14400, 21600, 28800, 36000, 43200, 57600, 72000,
			86400, 172800, 259200, 432000, 864000, 1296000, 1728000, 2160000, 2592000}}, []string{"nodepool"})
	kDecisions = counter("voluntary_disruption", "decisions_total",
		"Number of disruption decisions performed. Labeled by disruption decision, reason, and consolidation type.",
		"decision", "reason", "consolidation_type")
	kDecisionsByPool = counter("voluntary_disruption", "decisions_by_nodepool_total",
		"Number of disruption decisions performed by nodepool. Labeled by nodepool name, disruption decision, reason, and consolidation type.",
		"nodepool", "decision", "reason", "consolidation_type")
	kEligible = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: karpenterNamespace, Subsystem: "voluntary_disruption",
		Name: "eligible_nodes", Help: "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason."}, []string{"reason"})
	kFailedValidations = counter("voluntary_disruption", "failed_validations_total",
		"Number of candidates that were selected for disruption but failed validation. Labeled by consolidation type.", "consolidation_type")
	kAllowed = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: karpenterNamespace, Subsystem: "nodepools",
		Name: "allowed_disruptions", Help: "The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. Labeled by NodePool."},
		[]string{"nodepool", "reason"})
)

func karpenterCollectors() []prometheus.Collector {
	return []prometheus.Collector{kNodeClaimsCreated, kNodeClaimsTerminated, kNodeClaimsDisrupted, kNodeClaimsUnhealthyDisrupted,
		kNodeClaimTermination, kNodesCreated, kNodesTerminated, kNodesDrained, kNodeTermination, kNodeLifetime, kDecisions,
		kDecisionsByPool, kEligible, kFailedValidations, kAllowed, kPodStartup, kPodBound, kInterruptionReceived,
		kInterruptionDeleted, kInterruptionLatency, reconcileTotal, reconcileErrors, reconcileTime,
		kConditionTransitions, kConditionTransitionSeconds, kClaimTermination, kCloudDuration, kCloudErrors, kEvictionRequests}
}

// snake is how Karpenter writes a reason in a label value: "Underutilized" is "underutilized",
// "NodeClassNotReady" "node_class_not_ready".
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ConsolidationType is Karpenter's consolidation_type for a Tailor disruption method: empty,
// multi, single, or "" (drift and the forceful methods are not consolidation).
func ConsolidationType(method string) string {
	switch method {
	case "emptiness":
		return "empty"
	case "multi-node consolidation":
		return "multi"
	case "single-node consolidation":
		return "single"
	}
	return ""
}

// NodeClaimCreated counts a NodeClaim written by the provisioner (reason "provisioned") or as a
// disruption's replacement (the disruption reason).
func NodeClaimCreated(pool, reason string, minValuesRelaxed bool) {
	relaxed := "false"
	if minValuesRelaxed {
		relaxed = "true"
	}
	kNodeClaimsCreated.WithLabelValues(strings.ToLower(reason), pool, relaxed).Inc()
}

// NodeClaimTerminated counts a NodeClaim whose finalizer was removed, took after its deletion.
func NodeClaimTerminated(pool, capacityType, zone string, took time.Duration) {
	kNodeClaimsTerminated.WithLabelValues(pool, capacityType, zone).Inc()
	kNodeClaimTermination.WithLabelValues(pool).Observe(took.Seconds())
}

// NodeClaimDisrupted counts a NodeClaim deleted by a disruption method, voluntary or not, for
// reason (Underutilized, Empty, Drifted, Expired, Interrupted, Unhealthy). consolidationPolicy is
// the pool's, given for consolidation only, as Karpenter does; termination_mode follows the
// claim's terminationGracePeriod.
func NodeClaimDisrupted(claim *karpv1.NodeClaim, reason, consolidationPolicy string) {
	mode := "graceful"
	if tgp := claim.Spec.TerminationGracePeriod; tgp != nil {
		mode = "eventual"
		if tgp.Duration <= 0 {
			mode = "forceful"
		}
	}
	kNodeClaimsDisrupted.WithLabelValues(snake(reason), claim.Labels[karpv1.NodePoolLabelKey], claim.Labels[karpv1.CapacityTypeLabelKey],
		snake(consolidationPolicy), mode).Inc()
}

// NodeClaimUnhealthy counts a NodeClaim node repair deleted for an unhealthy node condition.
func NodeClaimUnhealthy(condition, pool, capacityType, imageID string) {
	kNodeClaimsUnhealthyDisrupted.WithLabelValues(snake(condition), pool, capacityType, imageID).Inc()
}

// NodeCreated counts a node that registered for a NodeClaim.
func NodeCreated(pool, zone string) { kNodesCreated.WithLabelValues(pool, zone).Inc() }

// NodeTerminated counts a node whose finalizer Tailor removed: took after its deletion, lived
// after its creation.
func NodeTerminated(pool, zone string, took, lived time.Duration) {
	kNodesTerminated.WithLabelValues(pool, zone).Inc()
	kNodeTermination.WithLabelValues(pool).Observe(took.Seconds())
	kNodeLifetime.WithLabelValues(pool).Observe(lived.Seconds())
}

// NodeDrained counts a node whose drain finished.
func NodeDrained(pool string) { kNodesDrained.WithLabelValues(pool).Inc() }

// VoluntaryDecision counts a node the disruption loop decided to remove (Karpenter counts its
// voluntary methods only: emptiness, drift, consolidation).
func VoluntaryDecision(decision, method, reason, pool string) {
	ct := ConsolidationType(method)
	kDecisions.WithLabelValues(decision, strings.ToLower(reason), ct).Inc()
	kDecisionsByPool.WithLabelValues(pool, decision, strings.ToLower(reason), ct).Inc()
}

// EligibleNodes sets how many nodes a voluntary reason could act on at the last pass.
func EligibleNodes(reason string, n int) {
	kEligible.WithLabelValues(strings.ToLower(reason)).Set(float64(n))
}

// FailedValidation counts a decision abandoned at its re-check.
func FailedValidation(method string) {
	kFailedValidations.WithLabelValues(ConsolidationType(method)).Inc()
}

// AllowedDisruptions sets what a pool's budgets allow now for reason.
func AllowedDisruptions(pool, reason string, n int) {
	kAllowed.WithLabelValues(pool, reason).Set(float64(n)) // Karpenter does not lower-case this one
}
