package simulation

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// The PreFilter plugins that count pods across every node in view: InterPodAffinity and
// PodTopologySpread. Their PreFilter reads, of the incoming pod, only its namespace, labels,
// affinity terms, spread constraints, node selection and tolerations (which nodes a spread
// counts), never its resource requests; and it costs a walk over every pod on every node, where
// the other plugins' PreFilter reads the pod alone. So two pods that differ only in what they
// request share these two plugins' states exactly, and a planner that has one pod's state at
// hand need not walk the fleet again for the other (PreFilterLike).
var counting = []string{names.InterPodAffinity, names.PodTopologySpread}

// countingStateKey is where a counting plugin writes its PreFilter state ("PreFilter" + its
// name, in both plugins).
func countingStateKey(plugin string) fwk.StateKey { return fwk.StateKey("PreFilter" + plugin) }

// withoutCounting returns p without the counting plugins at PreFilter.
func withoutCounting(p *config.KubeSchedulerProfile) *config.KubeSchedulerProfile {
	out := p.DeepCopy()
	out.Plugins.PreFilter.Enabled = withoutNames(out.Plugins.PreFilter.Enabled, sets.New(counting...))
	for _, name := range counting {
		out.Plugins.PreFilter.Disabled = append(out.Plugins.PreFilter.Disabled, config.Plugin{Name: name})
	}
	return out
}

// PreFilterLike is PreFilter for pod, given like: the PreFilter state, against the same view, of
// a pod that differs from pod in its resource requests at most (the caller's guarantee). The
// counting plugins' states are copies of like's, and every other PreFilter plugin runs for pod
// itself, so the state is the one PreFilter would have written, without walking the nodes. ok
// is false when like lacks a counting plugin's state it did not skip; the caller then runs
// PreFilter.
func (s *Simulator) PreFilterLike(ctx context.Context, pod *corev1.Pod, like fwk.CycleState) (state fwk.CycleState, pre *fwk.PreFilterResult, status *fwk.Status, ok bool) {
	copies := make(map[fwk.StateKey]fwk.StateData, len(counting))
	likeSkips := like.GetSkipFilterPlugins()
	for _, plugin := range counting {
		if likeSkips.Has(plugin) {
			continue
		}
		data, err := like.Read(countingStateKey(plugin))
		if err != nil {
			if s.counted.Has(plugin) {
				return nil, nil, nil, false
			}
			continue
		}
		copies[countingStateKey(plugin)] = data.Clone()
	}
	state = framework.NewCycleState()
	pre, status, _ = s.uncounted.RunPreFilterPlugins(ctx, state, pod)
	// The plugins of uncounted set the skips of their own; the counting plugins skip pod as
	// they skipped like.
	skips := state.GetSkipFilterPlugins().Clone()
	for _, plugin := range counting {
		if likeSkips.Has(plugin) {
			skips.Insert(plugin)
		}
	}
	state.SetSkipFilterPlugins(skips)
	for key, data := range copies {
		state.Write(key, data)
	}
	if status.IsSuccess() {
		return state, pre, nil, true
	}
	return state, pre, status, true
}

// buildUncounted builds the framework PreFilterLike runs, and notes which counting plugins the
// profile runs at PreFilter.
func (s *Simulator) buildUncounted(build func(*config.KubeSchedulerProfile) (framework.Framework, error)) error {
	s.counted = sets.New[string]()
	for _, pl := range s.fw.ListPlugins().PreFilter.Enabled {
		if slices.Contains(counting, pl.Name) {
			s.counted.Insert(pl.Name)
		}
	}
	var err error
	s.uncounted, err = build(withoutCounting(s.profile))
	return err
}
