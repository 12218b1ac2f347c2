package metrics

import "github.com/prometheus/client_golang/prometheus"

// The disruption metrics are shared by every method (interruption, expiration, drift, emptiness,
// consolidation), so one dashboard shows why nodes went away, whichever controller removed them.
var (
	// DisruptionDecisions counts nodes a method decided to remove. decision is "delete" or
	// "replace"; method is interruption, expiration, emptiness, drift, or multi-node or
	// single-node consolidation; reason is the disruption reason (Interrupted, Expired, Drifted,
	// Empty, Underutilized).
	DisruptionDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "disruption", Name: "decisions_total",
		Help: "Nodes a disruption method decided to remove, by decision, method, reason and NodePool.",
	}, []string{"decision", "method", "reason", "nodepool"})
	// DisruptionEligibleNodes is how many nodes each reason could act on at the last pass.
	DisruptionEligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "disruption", Name: "eligible_nodes",
		Help: "Nodes eligible for disruption at the last pass, by reason.",
	}, []string{"reason"})
	// DisruptionAllowed is what each NodePool's budgets allow right now, by reason.
	DisruptionAllowed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "disruption", Name: "budget_allowed_disruptions",
		Help: "Nodes each NodePool's budgets allow to be disrupted now, by reason.",
	}, []string{"nodepool", "reason"})
	// DisruptionSavings adds up the hourly price saved by the decisions carried out.
	DisruptionSavings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "disruption", Name: "savings_per_hour_total",
		Help: "Price per hour saved by disruption decisions carried out, by reason.",
	}, []string{"reason"})
	// DisruptionValidationFailures counts decisions dropped when the re-check after the
	// validation period no longer agreed.
	DisruptionValidationFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "disruption", Name: "failed_validations_total",
		Help: "Disruption decisions abandoned because the re-check after the validation period disagreed.",
	}, []string{"reason"})
)

func disruptionCollectors() []prometheus.Collector {
	return []prometheus.Collector{DisruptionDecisions, DisruptionEligibleNodes, DisruptionAllowed,
		DisruptionSavings, DisruptionValidationFailures}
}
