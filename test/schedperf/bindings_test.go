package schedperf

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// bindings watches the pods a selector selects and stamps when each is first seen bound.
type bindings struct {
	want  int
	mu    sync.Mutex
	bound map[string]bool
	first time.Time
	last  time.Time
	all   chan struct{}
	ended chan struct{}
}

// watchBindings starts watching before the pods are created, so no binding is missed.
func watchBindings(ctx context.Context, kube kubernetes.Interface, selector string, want int) (*bindings, error) {
	w, err := kube.CoreV1().Pods(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("watching pods %s: %w", selector, err)
	}
	bs := &bindings{want: want, bound: map[string]bool{}, all: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(bs.ended)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if p, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted && p.Spec.NodeName != "" && bs.record(p.Name) {
					return
				}
			}
		}
	}()
	return bs, nil
}

// record stamps a pod bound; it returns true once every wanted pod is.
func (bs *bindings) record(name string) bool {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.bound[name] {
		return false
	}
	now := time.Now()
	if len(bs.bound) == 0 {
		bs.first = now
	}
	bs.bound[name] = true
	bs.last = now
	if len(bs.bound) == bs.want {
		close(bs.all)
		return true
	}
	return false
}

// wait returns when every wanted pod is bound, or fails with how many are after timeout.
func (bs *bindings) wait(ctx context.Context, timeout time.Duration) error {
	select {
	case <-bs.all:
		return nil
	case <-bs.ended:
		select {
		case <-bs.all:
			return nil
		default:
		}
		return fmt.Errorf("the pod watch ended with %d of %d pods bound", bs.count(), bs.want)
	case <-time.After(timeout):
		return fmt.Errorf("%d of %d pods bound after %s", bs.count(), bs.want, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (bs *bindings) count() int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return len(bs.bound)
}
