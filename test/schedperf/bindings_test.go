package schedperf

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// bindings watches the pods a selector selects, through an informer (which lists again if the
// API server ends its watch), and stamps when each is first seen bound.
type bindings struct {
	want  int
	mu    sync.Mutex
	bound map[string]bool
	// at are the times of the bindings, in the order seen.
	at  []time.Time
	all chan struct{}
}

// watchBindings starts watching before the pods are created, so no binding is missed; the watch
// ends with ctx.
func watchBindings(ctx context.Context, kube kubernetes.Interface, selector string, want int) (*bindings, error) {
	bs := &bindings{want: want, bound: map[string]bool{}, all: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Core().V1().Pods().Informer()
	seen := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			bs.record(p.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the informer on pods %s did not sync", selector)
	}
	return bs, nil
}

// record stamps a pod bound.
func (bs *bindings) record(name string) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.bound[name] {
		return
	}
	bs.bound[name] = true
	bs.at = append(bs.at, time.Now())
	if len(bs.bound) == bs.want {
		close(bs.all)
	}
}

// wait returns when every wanted pod is bound, or fails with how many are after timeout.
func (bs *bindings) wait(ctx context.Context, timeout time.Duration) error {
	select {
	case <-bs.all:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%d of %d pods bound after %s", bs.count(), bs.want, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// first is when the first binding was seen, or the zero time.
func (bs *bindings) first() time.Time {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if len(bs.at) == 0 {
		return time.Time{}
	}
	return bs.at[0]
}

func (bs *bindings) count() int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return len(bs.bound)
}

// rateFrom returns the pods bound per second from t0 to the last binding, and how many pods
// that counts. With t0 zero it is from the first binding, which starts the interval and is not
// counted.
func (bs *bindings) rateFrom(t0 time.Time) (perSecond float64, pods int, took time.Duration) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if len(bs.at) == 0 {
		return 0, 0, 0
	}
	if t0.IsZero() {
		t0 = bs.at[0]
	}
	for _, at := range bs.at {
		if at.After(t0) {
			pods++
		}
	}
	took = bs.at[len(bs.at)-1].Sub(t0)
	if took <= 0 {
		return 0, pods, took
	}
	return float64(pods) / took.Seconds(), pods, took
}
