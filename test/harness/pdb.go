package harness

import (
	"context"
	"fmt"
	"maps"
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
	// healthy are, per budget, the ready pods it selected when last met with any ready (a
	// budget's status lags its pods: a reading can be met with none ready any more); those
	// missing at a violation are the pods that went around it. members are every pod each
	// budget selected in any reading.
	healthy map[string][]string
	members map[string]map[string]bool
	stop    context.CancelFunc
	done    chan struct{}
}

// PDBViolation is one reading below a budget that had been met.
type PDBViolation struct {
	Detail string
	At     time.Time
	// Short is how many healthy pods the budget lacks.
	Short int32
	// Members are every pod the budget selected so far: their events tell who removed those
	// gone (Detail names them).
	Members []string
}

// WatchPDBs starts watching the budgets of namespace.
func WatchPDBs(ctx context.Context, kube kubernetes.Interface, namespace string) *PDBWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &PDBWatch{met: map[string]bool{}, healthy: map[string][]string{}, members: map[string]map[string]bool{},
		stop: cancel, done: make(chan struct{})}
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
				w.remember(pdb.Name, pods.Items, sel)
				switch {
				case st.CurrentHealthy >= st.DesiredHealthy:
					w.met[pdb.Name] = true
					if ready := readyNames(pods.Items, sel); len(ready) > 0 {
						w.healthy[pdb.Name] = ready
					}
				case w.met[pdb.Name]:
					gone := missing(w.healthy[pdb.Name], pods.Items)
					now := time.Now()
					w.violations = append(w.violations, PDBViolation{
						Detail: fmt.Sprintf("%s at %s: currentHealthy %d < desiredHealthy %d (expectedPods %d); gone since last met: %s; its pods now: %s",
							pdb.Name, now.Format("15:04:05.000"), st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods,
							orNone(gone), describePods(pods.Items, sel)),
						At: now, Short: st.DesiredHealthy - st.CurrentHealthy, Members: slices.Sorted(maps.Keys(w.members[pdb.Name])),
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

// remember adds the pods sel selects to the budget's members.
func (w *PDBWatch) remember(budget string, pods []corev1.Pod, sel labels.Selector) {
	if w.members[budget] == nil {
		w.members[budget] = map[string]bool{}
	}
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			w.members[budget][p.Name] = true
		}
	}
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

// preemptionWindow is how long before a violation a preemption of one of the budget's pods
// explains it: the budget's status follows its pods within seconds.
const preemptionWindow = time.Minute

// tailorsShare keeps the violations that Tailor could have caused. A budget's pod that the
// scheduler preempted for a pod of higher priority goes around the budget by Kubernetes' design
// (preemption honours budgets only as far as it can), while a node that Tailor drains evicts
// through the API, which refuses what a budget forbids. A violation is set aside when at least
// as many of the budget's pods as it lacks were preempted in the minute before it; excused
// lists, for the log, who preempted them.
func tailorsShare(ctx context.Context, kube kubernetes.Interface, namespace string, violations []PDBViolation) (kept []PDBViolation, excused []string, err error) {
	events, err := kube.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return violations, nil, err
	}
	type preemption struct {
		at   time.Time
		note string
	}
	byScheduler := map[string][]preemption{}
	for _, ev := range events.Items {
		if ev.Reason == "Preempted" && ev.Regarding.Kind == "Pod" {
			byScheduler[ev.Regarding.Name] = append(byScheduler[ev.Regarding.Name],
				preemption{eventTime(ev.EventTime.Time, ev.DeprecatedLastTimestamp.Time), ev.Note})
		}
	}
	for _, v := range violations {
		var why []string
		for _, pod := range v.Members {
			for _, p := range byScheduler[pod] {
				if !p.at.Before(v.At.Add(-preemptionWindow)) && !p.at.After(v.At.Add(time.Second)) {
					why = append(why, pod+": "+p.note)
					break
				}
			}
		}
		if v.Short > 0 && int32(len(why)) >= v.Short {
			excused = append(excused, strings.Join(why, "; "))
			continue
		}
		kept = append(kept, v)
	}
	return kept, excused, nil
}
