package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PDBWatch reads every PodDisruptionBudget's status every 100 ms. Once a budget has been met
// (currentHealthy >= desiredHealthy, status current with the spec), any later reading below it
// is a violation: evictions through the API are refused before that can happen, so only a pod
// removed around the budget (a node deleted without draining, say) makes it.
type PDBWatch struct {
	mu         sync.Mutex
	met        map[string]bool
	violations []string
	stop       context.CancelFunc
	done       chan struct{}
}

// WatchPDBs starts watching the budgets of namespace.
func WatchPDBs(ctx context.Context, kube kubernetes.Interface, namespace string) *PDBWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &PDBWatch{met: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			list, err := kube.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			w.mu.Lock()
			for _, pdb := range list.Items {
				st := pdb.Status
				if st.ObservedGeneration < pdb.Generation {
					continue
				}
				switch {
				case st.CurrentHealthy >= st.DesiredHealthy:
					w.met[pdb.Name] = true
				case w.met[pdb.Name]:
					w.violations = append(w.violations, fmt.Sprintf("%s at %s: currentHealthy %d < desiredHealthy %d (expectedPods %d)",
						pdb.Name, time.Now().Format("15:04:05.000"), st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods))
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// Stop ends the watch and returns the violations seen and the budgets that were ever met (the
// others were never checked: their pods were short from the start).
func (w *PDBWatch) Stop() (violations []string, checked int) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.violations, len(w.met)
}
