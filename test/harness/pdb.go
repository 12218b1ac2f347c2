package harness

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
)

// PDBWatch reads every PodDisruptionBudget's status every 100 ms. Once a budget has been met
// (currentHealthy >= desiredHealthy, status current with the spec), any later reading below it
// is a violation: evictions through the API are refused before that can happen, so only a pod
// removed around the budget (a node deleted without draining, say) makes it.
type PDBWatch struct {
	mu         sync.Mutex
	met        map[string]bool
	violations []PDBViolation
	// healthy are, per budget, the ready pods it selected when last met: those missing at a
	// violation are the pods that went around it.
	healthy map[string][]string
	stop    context.CancelFunc
	done    chan struct{}
}

// PDBViolation is one reading below a budget that had been met.
type PDBViolation struct {
	Detail string
	// Gone are the pods that were ready when the budget was last met and are gone or leaving
	// now; their events tell who removed them.
	Gone []string
}

// WatchPDBs starts watching the budgets of namespace.
func WatchPDBs(ctx context.Context, kube kubernetes.Interface, namespace string) *PDBWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &PDBWatch{met: map[string]bool{}, healthy: map[string][]string{}, stop: cancel, done: make(chan struct{})}
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
			pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			w.mu.Lock()
			for _, pdb := range list.Items {
				st := pdb.Status
				if st.ObservedGeneration < pdb.Generation {
					continue
				}
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil {
					continue
				}
				switch {
				case st.CurrentHealthy >= st.DesiredHealthy:
					w.met[pdb.Name] = true
					w.healthy[pdb.Name] = readyNames(pods.Items, sel)
				case w.met[pdb.Name]:
					gone := missing(w.healthy[pdb.Name], pods.Items)
					w.violations = append(w.violations, PDBViolation{
						Detail: fmt.Sprintf("%s at %s: currentHealthy %d < desiredHealthy %d (expectedPods %d); gone since last met: %s; its pods now: %s",
							pdb.Name, time.Now().Format("15:04:05.000"), st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods,
							orNone(gone), describePods(pods.Items, sel)),
						Gone: gone,
					})
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// Stop ends the watch and returns the violations seen and the budgets that were ever met (the
// others were never checked: their pods were short from the start).
func (w *PDBWatch) Stop() (violations []PDBViolation, checked int) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.violations, len(w.met)
}

// readyNames are the ready pods sel selects that are not being deleted.
func readyNames(pods []corev1.Pod, sel labels.Selector) []string {
	var out []string
	for i := range pods {
		p := &pods[i]
		if sel.Matches(labels.Set(p.Labels)) && p.DeletionTimestamp == nil && podutil.IsPodReady(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// missing are the names that no pod of pods has any more, or whose pod is being deleted.
func missing(names []string, pods []corev1.Pod) []string {
	present := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			present[p.Name] = true
		}
	}
	var out []string
	for _, n := range names {
		if !present[n] {
			out = append(out, n)
		}
	}
	return out
}

// describePods says where each pod sel selects is and how it stands.
func describePods(pods []corev1.Pod, sel labels.Selector) string {
	var out []string
	for i := range pods {
		p := &pods[i]
		if !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		s := fmt.Sprintf("%s on %q %s ready=%t created %s", p.Name, p.Spec.NodeName, p.Status.Phase,
			podutil.IsPodReady(p), p.CreationTimestamp.Format("15:04:05"))
		if p.DeletionTimestamp != nil {
			s += " deleting"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return orNone(out)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// tailorsShare keeps the violations that Tailor could have caused: a budget's pod that the
// scheduler preempted for a pod of higher priority goes around the budget by Kubernetes' design
// (preemption honours budgets only as far as it can), and a node that Tailor drains evicts
// through the API, which refuses what a budget forbids. A violation counts unless every pod gone
// since the budget was last met carries the scheduler's Preempted event.
func tailorsShare(ctx context.Context, kube kubernetes.Interface, namespace string, violations []PDBViolation) (kept []PDBViolation, preempted int, err error) {
	events, err := kube.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return violations, 0, err
	}
	byScheduler := map[string]bool{}
	for _, ev := range events.Items {
		if ev.Reason == "Preempted" && ev.Regarding.Kind == "Pod" {
			byScheduler[ev.Regarding.Name] = true
		}
	}
	for _, v := range violations {
		if len(v.Gone) > 0 && !slices.ContainsFunc(v.Gone, func(name string) bool { return !byScheduler[name] }) {
			preempted++
			continue
		}
		kept = append(kept, v)
	}
	return kept, preempted, nil
}
