package faults

import (
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// podLossWatch follows every pod of the app as it goes, by the DisruptionTarget condition the
// API server and the controllers write on a pod they remove: EvictionByEvictionAPI is a drain
// that honoured the PodDisruptionBudget; any other reason (DeletionByPodGC: its node went first;
// TerminationByKubelet, DeletionByTaintManager) is a pod lost around the budget. Pods deleted
// with no such condition were deleted by a controller (the ReplicaSet scaling down, or Tailor
// finishing an eviction its budget granted).
// evictionByEvictionAPI is the reason the Eviction API gives (k8s.io/api names no constant for it).
const evictionByEvictionAPI = "EvictionByEvictionAPI"

type podLossWatch struct {
	stop chan struct{}

	mu      sync.Mutex
	evicted map[string]bool
	deleted map[string]bool
	lost    map[string]string
}

func (e *chaosDayEnv) watchPodLoss(app string) *podLossWatch {
	w := &podLossWatch{stop: make(chan struct{}), evicted: map[string]bool{}, deleted: map[string]bool{}, lost: map[string]string{}}
	factory := informers.NewSharedInformerFactoryWithOptions(e.Cluster.Kube, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=" + app }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { w.saw(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			w.saw(obj)
		},
	}); err != nil {
		e.T.Fatal(err)
	}
	factory.Start(w.stop)
	factory.WaitForCacheSync(w.stop)
	e.T.Cleanup(func() {
		w.close()
		factory.Shutdown()
	})
	return w
}

func (w *podLossWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
}

func (w *podLossWatch) saw(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		if c.Reason == evictionByEvictionAPI {
			w.evicted[p.Name] = true
		} else {
			w.lost[p.Name] = fmt.Sprintf("%s on node %s: %s", c.Reason, p.Spec.NodeName, c.Message)
		}
		return
	}
	if !w.evicted[p.Name] && w.lost[p.Name] == "" {
		w.deleted[p.Name] = true
	}
}

// Stop ends the watch and fails the test for each pod lost.
func (w *podLossWatch) Stop(e *chaosDayEnv) {
	e.T.Helper()
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	var lost []string
	for name, why := range w.lost {
		lost = append(lost, name+" ("+why+")")
	}
	sort.Strings(lost)
	e.T.Logf("pods removed: %d evicted, %d deleted by a controller, %d lost", len(w.evicted), len(w.deleted), len(lost))
	for _, l := range lost {
		e.T.Errorf("pod lost: %s", l)
	}
}
