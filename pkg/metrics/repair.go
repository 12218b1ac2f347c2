package metrics

import "github.com/prometheus/client_golang/prometheus"

// Node repair's metrics, beside the shared disruption decisions (method "repair", reason
// "Unhealthy"): which condition brought nodes down, and how often the guards held a repair back.
var (
	// NodeClaimsUnhealthyDisrupted counts NodeClaims deleted because their node was unhealthy,
	// by the node condition that was, as Karpenter's nodeclaims_unhealthy_disrupted_total.
	NodeClaimsUnhealthyDisrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "unhealthy_disrupted_total",
		Help: "NodeClaims deleted by node repair, by the unhealthy node condition, NodePool and capacity type.",
	}, []string{"condition", "nodepool", "capacity_type"})
	// NodeRepairBlocked counts repairs held back because too many nodes were unhealthy at once.
	NodeRepairBlocked = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "node_repair", Name: "blocked_total",
		Help: "Node repairs held back because more than 20% of the NodePool's or the cluster's nodes were unhealthy, by NodePool.",
	}, []string{"nodepool"})
)
