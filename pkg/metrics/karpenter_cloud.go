package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

var (
	kCloudDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: karpenterNamespace, Subsystem: "cloudprovider",
		Name: "duration_seconds", Help: "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
		Buckets: prometheus.DefBuckets}, []string{"controller", "method", "provider"})
	kCloudErrors = counter("cloudprovider", "errors_total", "Total number of errors returned from CloudProvider calls.",
		"controller", "method", "provider", "error")
)

// CloudCall starts timing a call of method (Create, Delete, Get, List, IsDrifted,
// GetInstanceTypes: Karpenter's names) by controller; the function it returns records the call's
// end and its error. Wall time, not the injected clock: it measures a real call to the cloud.
func CloudCall(controller, method string, p cloud.CloudProvider) func(error) {
	start := time.Now()
	return func(err error) {
		kCloudDuration.WithLabelValues(controller, method, p.Name()).Observe(time.Since(start).Seconds())
		if err != nil {
			kCloudErrors.WithLabelValues(controller, method, p.Name(), cloudErrorKind(err)).Inc()
		}
	}
}

// cloudErrorKind is Karpenter's error label: the well-known cloud errors by name, others "".
func cloudErrorKind(err error) string {
	switch {
	case cloud.IsInsufficientCapacity(err):
		return "InsufficientCapacityError"
	case cloud.IsNotFound(err):
		return "NodeClaimNotFoundError"
	case cloud.AsNodeClassNotReady(err) != nil:
		return "NodeClassNotReadyError"
	}
	return ""
}
