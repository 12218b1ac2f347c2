package metrics

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

var (
	kPodStartup = prometheus.NewSummary(prometheus.SummaryOpts{Namespace: karpenterNamespace, Subsystem: "pods",
		Name: "startup_duration_seconds", Help: "The time from pod creation until the pod is running.", Objectives: karpenterObjectives})
	kPodBound = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: karpenterNamespace, Subsystem: "pods",
		Name: "bound_duration_seconds", Help: "The time from pod creation until the pod is bound.", Buckets: karpenterDurationBuckets})

	kEvictionRequests = counter("pods", "eviction_requests_total",
		"The total number of pod eviction requests made by Karpenter, labeled by response code", "code")

	kInterruptionReceived = counter("interruption", "received_messages_total",
		"Count of messages received from the SQS queue. Broken down by message type and whether the message was actionable.", "message_type")
	kInterruptionDeleted = prometheus.NewCounter(prometheus.CounterOpts{Namespace: karpenterNamespace, Subsystem: "interruption",
		Name: "deleted_messages_total", Help: "Count of messages deleted from the SQS queue."})
	kInterruptionLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: karpenterNamespace, Subsystem: "interruption",
		Name: "message_queue_duration_seconds", Help: "Amount of time an interruption message is on the queue before it is processed by karpenter.",
		Buckets: karpenterDurationBuckets})

	// controller-runtime's reconcile metrics, by its names and label values, for Tailor's keyed
	// controllers: Karpenter's performance dashboard charts them by controller.
	reconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_total",
		Help: "Total number of reconciliations per controller"}, []string{"controller", "result"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_errors_total",
		Help: "Total number of reconciliation errors per controller"}, []string{"controller"})
	reconcileTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "controller_runtime_reconcile_time_seconds",
		Help: "Length of time per reconciliation per controller", Buckets: karpenterDurationBuckets}, []string{"controller"})
)

// Reconciled records one reconcile of controller: how long it took, and its result as
// controller-runtime names it (success, error, requeue_after).
func Reconciled(controller string, took time.Duration, requeue time.Duration, err error) {
	result := "success"
	switch {
	case err != nil:
		result = "error"
		reconcileErrors.WithLabelValues(controller).Inc()
	case requeue > 0:
		result = "requeue_after"
	}
	reconcileTotal.WithLabelValues(controller, result).Inc()
	reconcileTime.WithLabelValues(controller).Observe(took.Seconds())
}

// interruptionKinds maps the kinds of notice Tailor's AWS consumer reads to Karpenter's
// message_type values.
var interruptionKinds = map[string]string{
	"SpotInterruption":                "spot_interrupted",
	"RebalanceRecommendation":         "rebalance_recommendation",
	"ScheduledChange":                 "scheduled_change",
	"InstanceStopping":                "instance_stopped",
	"InstanceTerminating":             "instance_terminated",
	"CapacityReservationInterruption": "capacity_reservation_interrupted",
}

// EvictionRequested counts an Eviction API call by the HTTP status code it got, as Karpenter's
// karpenter_pods_eviction_requests_total does: 200, 429 (a PodDisruptionBudget said no), 404, ...
func EvictionRequested(err error) {
	code := "200"
	var status apierrors.APIStatus
	if err != nil {
		if !errors.As(err, &status) {
			return // no answer from the API server: not a request Karpenter would count
		}
		code = strconv.Itoa(int(status.Status().Code))
	}
	kEvictionRequests.WithLabelValues(code).Inc()
}

// InterruptionReceived counts a notice taken off the interruption queue, sent at sent (zero if
// unknown), by Karpenter's message type.
func InterruptionReceived(kind string, sent time.Time, now time.Time) {
	mt, ok := interruptionKinds[kind]
	if !ok {
		mt = "no_op"
	}
	kInterruptionReceived.WithLabelValues(mt).Inc()
	if !sent.IsZero() {
		kInterruptionLatency.Observe(now.Sub(sent).Seconds())
	}
}

// InterruptionDeleted counts messages deleted from the interruption queue.
func InterruptionDeleted(n int) { kInterruptionDeleted.Add(float64(n)) }

// PodChanged observes the pod startup and bind durations Karpenter serves, from an informer's
// update: a pod once seen pending that turns Ready, whether in the same update as it starts
// running or later (a readiness probe), or that is bound. Both times come from the pod's
// conditions, so a late update still measures the right span.
func PodChanged(old, pod *corev1.Pod) {
	if old.Status.Phase == corev1.PodPending {
		startups.seen(pod)
		if c := condition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionTrue && !isTrue(old, corev1.PodScheduled) {
			kPodBound.Observe(c.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds())
		}
	}
	if c := condition(pod, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue && !isTrue(old, corev1.PodReady) && startups.started(pod) {
		kPodStartup.Observe(c.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds())
	}
}

// startups are the pods seen pending and not yet Ready, so that a pod's first Ready is observed
// once, and a readiness flap later is not. A pod deleted before it is Ready is forgotten once the
// set is large, after an hour.
var startups = &startupSet{pods: map[types.UID]time.Time{}}

type startupSet struct {
	mu   sync.Mutex
	pods map[types.UID]time.Time
}

// startupSetSweep is the size past which entries older than an hour are dropped.
const startupSetSweep = 50000

func (s *startupSet) seen(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[pod.UID] = pod.CreationTimestamp.Time
	if len(s.pods) > startupSetSweep {
		for uid, created := range s.pods {
			if time.Since(created) > time.Hour {
				delete(s.pods, uid)
			}
		}
	}
}

// started reports whether the pod was seen pending and forgets it.
func (s *startupSet) started(pod *corev1.Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pods[pod.UID]
	delete(s.pods, pod.UID)
	return ok
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func isTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	c := condition(pod, t)
	return c != nil && c.Status == corev1.ConditionTrue
}
