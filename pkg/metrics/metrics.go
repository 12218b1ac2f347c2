// Package metrics defines Tailor's Prometheus metrics. They are registered with the scheduler's
// registry, so kube-scheduler's /metrics endpoint serves them beside its own.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"
)

const namespace = "tailor"

var (
	// NodeClaimsCreated counts NodeClaims the provisioner created.
	NodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "created_total",
		Help: "NodeClaims created, by NodePool and reason.",
	}, []string{"nodepool", "reason"})
	// NodeClaimsGivenBack counts NodeClaims the provisioner deleted because every pod they were
	// launched for went elsewhere: reason unlaunched (before the instance) or unused (after).
	NodeClaimsGivenBack = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "given_back_total",
		Help: "NodeClaims deleted because the pods they were launched for went elsewhere, by NodePool and reason (unlaunched, unused).",
	}, []string{"nodepool", "reason"})
	// NodeClaimsLaunched counts instances the cloud launched.
	NodeClaimsLaunched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "launched_total",
		Help: "NodeClaims whose instance the cloud launched, by NodePool.",
	}, []string{"nodepool"})
	// NodeClaimsRegistered counts NodeClaims whose Node joined.
	NodeClaimsRegistered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "registered_total",
		Help: "NodeClaims whose Node registered, by NodePool.",
	}, []string{"nodepool"})
	// NodeClaimsInitialized counts NodeClaims whose Node became usable.
	NodeClaimsInitialized = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "initialized_total",
		Help: "NodeClaims whose Node became Ready with its startup taints gone, by NodePool.",
	}, []string{"nodepool"})
	// NodeClaimsTerminated counts NodeClaims that are gone, with why they were deleted.
	NodeClaimsTerminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "NodeClaims terminated, by NodePool and reason.",
	}, []string{"nodepool", "reason"})
	// LaunchToRegistered is how long instances take to join as Nodes.
	LaunchToRegistered = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "launched_to_registered_seconds",
		Help: "Seconds from a NodeClaim's launch to its Node's registration.", Buckets: durationBuckets,
	}, []string{"nodepool"})
	// RegisteredToInitialized is how long registered Nodes take to become usable.
	RegisteredToInitialized = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "nodeclaims", Name: "registered_to_initialized_seconds",
		Help: "Seconds from a Node's registration to its initialization.", Buckets: durationBuckets,
	}, []string{"nodepool"})
	// TerminationDuration is how long a node takes from deletion to its finalizer being dropped.
	TerminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "nodes", Name: "termination_duration_seconds",
		Help: "Seconds from a node's deletion to its termination: drain, volume detach, instance gone.", Buckets: durationBuckets,
	}, []string{"nodepool"})
	// PodsEvicted counts eviction attempts by outcome.
	PodsEvicted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "pods", Name: "evicted_total",
		Help: "Pods evicted or deleted while draining nodes, by outcome.",
	}, []string{"outcome"})
	// ProvisionerRounds counts the provisioner's rounds by what each did: "quiet" (nothing could
	// need capacity, so the cluster was not read), "idle" (read, and found nothing to plan) or
	// "planned". A backlog of pods that fit existing nodes should add to "quiet", and to "idle" at
	// most once per resync while pods are on their way to the nodes their plans chose.
	ProvisionerRounds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "rounds_total",
		Help: "Provisioning rounds, by outcome: quiet (the cluster not read), idle (nothing to plan) or planned.",
	}, []string{"outcome"})
	// PlanDuration is how long one provisioning plan takes.
	PlanDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "plan_duration_seconds",
		Help: "Seconds spent planning one batch of pending pods.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	// PodsPerPlan is the size of the batches planned.
	PodsPerPlan = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "pods_per_plan",
		Help: "Pending pods in one provisioning plan.", Buckets: prometheus.ExponentialBuckets(1, 2, 16),
	})
	// PodsStranded is how many pending pods are stranded now: a plan put them on a node that has
	// been up for longer than the plugin's strandedAfter, and the scheduler has not bound them.
	PodsStranded = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "pods_stranded",
		Help: "Pending pods a plan put on a node that has been up for longer than strandedAfter.",
	})
	// PodsStrandedTotal counts each time a pod was found stranded.
	PodsStrandedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "pods_stranded_total",
		Help: "Times a pending pod was found stranded beside the node a plan put it on.",
	})
	// NodesUnused is how many launched nodes no pod has landed on, strandedAfter after they
	// initialized, and NodesUnusedTotal counts them once each.
	NodesUnused = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "nodes_unused",
		Help: "Launched nodes no pod has landed on since they initialized, strandedAfter ago or more.",
	})
	NodesUnusedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "nodes_unused_total",
		Help: "Launched nodes found with no pod landed on them strandedAfter after they initialized.",
	})
	// PodsWoken counts pods moved into the scheduler's active queue because they were still
	// pending a few seconds after the node a plan put them on came up.
	PodsWoken = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "pods_woken_total",
		Help: "Pods still pending a few seconds after the node a plan put them on came up, moved into the scheduler's active queue.",
	})
	// PodsRefusedBackoff counts each time plans stopped launching for a pod that the scheduler
	// refused on the nodes launched for it.
	PodsRefusedBackoff = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "pods_refused_backoff_total",
		Help: "Times plans stopped launching for a pod the scheduler did not place on the nodes launched for it.",
	})
	// PodsUnplaceable counts pods a plan could place nowhere, by reason.
	PodsUnplaceable = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "pods_unplaceable_total",
		Help: "Pods a plan could not place, by reason.",
	}, []string{"reason"})
	// PodsToldUnavailable counts FailedProvisioning Events telling a pod that a NodePool that
	// would serve it cannot launch (node class not ready, launches held back): one per pod and
	// cause, however many plans run while it lasts.
	PodsToldUnavailable = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "provisioner", Name: "pods_told_nodepool_unavailable_total",
		Help: "Pods told that a NodePool that would serve them cannot launch, by NodePool and reason.",
	}, []string{"nodepool", "reason"})
)

var durationBuckets = []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1200}

var once sync.Once

// Register adds Tailor's metrics to the scheduler's registry; later calls do nothing, so every
// sandbox and test in one process can call it.
func Register() {
	once.Do(func() {
		legacyregistry.Registerer().MustRegister(Collectors()...)
	})
}

// Collectors are every metric Register adds. A Vec has no series until a label set is observed,
// so a check that a dashboard's queries are served reads their names and labels from here.
func Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{NodeClaimsCreated, NodeClaimsGivenBack, NodeClaimsLaunched, NodeClaimsRegistered,
		NodeClaimsInitialized, NodeClaimsTerminated, LaunchToRegistered, RegisteredToInitialized,
		TerminationDuration, PodsEvicted, ProvisionerRounds, PlanDuration, PodsPerPlan, PodsUnplaceable, PodsToldUnavailable, nodesCollector{},
		PodsStranded, PodsStrandedTotal, PodsWoken, PodsRefusedBackoff, NodesUnused, NodesUnusedTotal, NodeClaimsUnhealthyDisrupted, NodeRepairBlocked, InterruptionNotices, clusterCollector{}},
		append(disruptionCollectors(), karpenterCollectors()...)...)
}
