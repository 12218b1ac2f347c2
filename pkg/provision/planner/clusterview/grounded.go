package clusterview

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailor-sh/tailor/pkg/simulation"
)

// A pod that an earlier plan sent to capacity in flight is counted there by the next plan, as if
// bound: the scheduler will bind it there, and the plans after it must leave it its room. For a
// pod with required pod affinity that promise can break while the pod waits. For example,
// a Job's pods must share a zone with each other and spread over zones with maxSkew 1, so only
// one can run. A plan sent one to a node launching in zone c, by the first-pod rule (no pod of
// the Job ran anywhere). Before that node came up the scheduler bound another of them to a node
// already running in zone a, by the same rule. The one headed for zone c could no longer go
// there, but the next plan counted it there: a pod of the Job in each zone, so the others
// passed affinity in both zones and the spread was even. It launched six nodes for six of them;
// the scheduler refused all six, and the seventh.
//
// So before a plan, each such pod is weighed again on its node as the scheduler weighs it:
// against the bound pods and those counted without that doubt, adding the ones that pass one at
// a time (a pod can lean on one headed the same way, as long as one of them stands on something
// real). Those that never pass are not counted, and are planned as the pending pods they are.

// Ungrounded returns the pods the view counts where an earlier plan or a nomination headed them
// (View.Headed) whose required pod affinity the scheduler would now refuse there. Only pods with
// required pod affinity are weighed: the rest cost nothing here.
func Ungrounded(ctx context.Context, sim *simulation.Simulator, v *View) []*corev1.Pod {
	var doubted []*corev1.Pod
	isDoubted := map[types.UID]bool{}
	for _, p := range v.Pods {
		if node, ok := v.Headed[p.UID]; ok && p.Spec.NodeName == node && requiresPodAffinity(p) {
			doubted = append(doubted, p)
			isDoubted[p.UID] = true
		}
	}
	if len(doubted) == 0 {
		return nil
	}
	ground := make([]*corev1.Pod, 0, len(v.Pods)-len(doubted))
	for _, p := range v.Pods {
		if !isDoubted[p.UID] {
			ground = append(ground, p)
		}
	}
	snapshot, err := simulation.NewSnapshot(ground, v.Nodes)
	if err != nil {
		return nil // the plan meets the same error and says so
	}
	// In the scheduler's queue order: highest priority, then oldest, first.
	slices.SortStableFunc(doubted, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(corev1helpers.PodPriority(b), corev1helpers.PodPriority(a)),
			a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	sim.Use(snapshot)
	for stood := true; stood && len(doubted) > 0; {
		stood = false
		left := doubted[:0]
		for _, p := range doubted {
			if standsOn(ctx, sim, snapshot, p) {
				stood = true
				continue
			}
			left = append(left, p)
		}
		doubted = left
	}
	return doubted
}

// standsOn reports whether InterPodAffinity lets p onto its node in snapshot, and if so adds it
// there for the pods weighed after it. A pod the check cannot weigh (its node is gone from the
// view, or the plugin errs) is left counted, as it was before the check.
func standsOn(ctx context.Context, sim *simulation.Simulator, snapshot *simulation.Snapshot, p *corev1.Pod) bool {
	ni, err := snapshot.NodeInfos().Get(p.Spec.NodeName)
	if err != nil {
		return true
	}
	if sim.InterPodAffinity(ctx, p, ni).IsRejected() {
		return false
	}
	snapshot.AddPod(ni, p)
	return true
}

func requiresPodAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// Uncount takes the pods out of the view: they are planned, not counted.
func (v *View) Uncount(pods []*corev1.Pod) {
	drop := make(map[types.UID]string, len(pods))
	for _, p := range pods {
		drop[p.UID] = v.Headed[p.UID]
		delete(v.Counted, p.UID)
		delete(v.Headed, p.UID)
	}
	v.Pods = slices.DeleteFunc(v.Pods, func(p *corev1.Pod) bool {
		node, ok := drop[p.UID]
		return ok && p.Spec.NodeName == node
	})
}
