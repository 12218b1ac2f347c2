package metrics

import "github.com/prometheus/client_golang/prometheus"

// InterruptionNotices counts the interruption notices Tailor's handler was given, whichever cloud
// sent them, by kind and by what came of each: Disrupted (the node is being removed), Recorded
// (a rebalance recommendation: Events only), Duplicate (a notice already acted on, delivered
// again: nothing done twice), Unknown (no NodeClaim has the instance). Beside the SQS consumer's
// received and deleted counts, it shows a storm's duplicates were absorbed, not acted on twice.
var InterruptionNotices = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace, Subsystem: "interruption", Name: "notices_total",
	Help: "Interruption notices handled, by kind and outcome (Disrupted, Recorded, Duplicate, Unknown).",
}, []string{"kind", "outcome"})
