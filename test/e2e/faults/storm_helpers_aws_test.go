package faults

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/cloud"
	lifecycleinterruption "github.com/tailor-sh/tailor/pkg/lifecycle/interruption"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// stormQueueCounts are the SQS consumer's messages received (all kinds) and deleted so far.
func stormQueueCounts() (received, deleted float64) {
	m := tailoraws.InterruptionMetrics()
	for _, k := range []eventbridge.Kind{eventbridge.KindSpotInterruption, eventbridge.KindRebalanceRecommendation, eventbridge.KindScheduledChange,
		eventbridge.KindInstanceStopping, eventbridge.KindInstanceTerminating, eventbridge.KindCapacityReservationInterruption} {
		received += testutil.ToFloat64(m.Received.WithLabelValues(string(k)))
	}
	return received, testutil.ToFloat64(m.Deleted)
}

// noticeOutcomes sums tailor_interruption_notices_total by outcome, over kinds.
func noticeOutcomes() map[string]float64 {
	out := map[string]float64{}
	for _, k := range []cloud.InterruptionKind{cloud.InterruptionSpot, cloud.InterruptionRebalance, cloud.InterruptionScheduledChange,
		cloud.InterruptionStopping, cloud.InterruptionTerminating, cloud.InterruptionCapacityReservation} {
		for _, o := range []string{lifecycleinterruption.OutcomeDisrupted, lifecycleinterruption.OutcomeRecorded, lifecycleinterruption.OutcomeDuplicate,
			lifecycleinterruption.OutcomeAlreadyRemoving, lifecycleinterruption.OutcomeUnknown} {
			out[o] += testutil.ToFloat64(metrics.InterruptionNotices.WithLabelValues(string(k), o))
		}
	}
	return out
}

// nodeTimes are when a test first saw a node tainted karpenter.sh/disrupted, and saw it deleted.
type nodeTimes struct {
	name          string
	tainted, gone time.Time
}

// nodeWatch records, per instance ID, its node's taint and deletion times, as an informer sees them.
type nodeWatch struct {
	mu    sync.Mutex
	nodes map[string]*nodeTimes
}

func (w *nodeWatch) of(instance string) nodeTimes {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.nodes[instance]; n != nil {
		return *n
	}
	return nodeTimes{}
}

func (w *nodeWatch) names(instances []string) map[string]bool {
	out := map[string]bool{}
	for _, id := range instances {
		if n := w.of(id); n.name != "" {
			out[n.name] = true
		}
	}
	return out
}

func (w *nodeWatch) saw(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok || node.Spec.ProviderID == "" {
		return
	}
	id := node.Spec.ProviderID[strings.LastIndex(node.Spec.ProviderID, "/")+1:]
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.nodes[id]
	if n == nil {
		n = &nodeTimes{name: node.Name}
		w.nodes[id] = n
	}
	if n.tainted.IsZero() && slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
		n.tainted = now
	}
	if deleted && n.gone.IsZero() {
		n.gone = now
	}
}

// watchNodes starts recording every node's taint and deletion, and returns once it has seen the
// nodes that exist.
func watchNodes(e *env.AWS) *nodeWatch {
	e.T.Helper()
	w := &nodeWatch{nodes: map[string]*nodeTimes{}}
	factory := informers.NewSharedInformerFactory(e.Cluster.Kube, 0)
	inf := factory.Core().V1().Nodes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.saw(obj, false) },
		UpdateFunc: func(_, obj any) { w.saw(obj, false) },
		DeleteFunc: func(obj any) { w.saw(obj, true) },
	}); err != nil {
		e.T.Fatal(err)
	}
	// Its own stop channel: cleanups run before the environment's context ends, and Shutdown
	// waits for the informer to stop.
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	e.T.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	return w
}

// waitRunningOff waits until want pods of the selector run, none on the given nodes.
func waitRunningOff(e *env.AWS, selector string, want int, off map[string]bool, timeout time.Duration) []corev1.Pod {
	var pods []corev1.Pod
	e.WaitFor(fmt.Sprintf("%d pods %q Running off the %d interrupted nodes", want, selector, len(off)), timeout, func() (bool, string) {
		list, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && !off[p.Spec.NodeName] && p.DeletionTimestamp == nil {
				running++
			}
		}
		pods = list.Items
		return running == want && len(list.Items) == want, fmt.Sprintf("%d of %d pods running elsewhere", running, len(list.Items))
	})
	return pods
}
