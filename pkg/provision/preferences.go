package provision

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// preferenceLadder returns the shapes in which the planner tries to place a pod on new capacity,
// strictest first, the pod itself last. As Karpenter does, a pod's preferences are honoured
// where new capacity can honour them: each shape but the last turns some of them into
// requirements (the heaviest preferred node-affinity term, preferred pod affinity and
// anti-affinity terms, ScheduleAnyway spread), and each next shape relaxes one more kind. A shape
// is meant to be stricter than the pod, and the plan books the pod itself, never the shape. A pod
// without preferences has one shape: itself.
//
// A shape is not always stricter, so the plan asks the Filter plugins about the pod beside it:
//   - required node affinity changes which nodes PodTopologySpread counts (nodeAffinityPolicy
//     Honor, the default): a pod that prefers spot and spreads over capacity types sees, as the
//     shape that requires spot, one capacity type and no skew, while the scheduler sees both
//     (harness seed 1708 launched 157 NodeClaims in 90 s that way);
//   - a ScheduleAnyway spread made DoNotSchedule leaves the nodes without its topology key out of
//     the counts of the pod's other constraints;
//   - InterPodAffinity lets the first pod of a group go anywhere when no pod matches all of its
//     required affinity terms, and a preferred term made required can be the one that none
//     matches.
func preferenceLadder(pod *corev1.Pod) []*corev1.Pod {
	if !hasPreferences(pod) {
		return []*corev1.Pod{pod}
	}
	kinds := []func(*corev1.Pod) bool{requireSpread, requirePodAffinity, requirePodAntiAffinity, requireNodeAffinity}
	var ladder []*corev1.Pod
	for drop := 0; drop < len(kinds); drop++ {
		shape := pod.DeepCopy()
		changed := false
		for _, require := range kinds[drop:] {
			changed = require(shape) || changed
		}
		if changed {
			ladder = append(ladder, shape)
		}
	}
	return append(ladder, pod)
}

// hasPreferences reports whether some step of the ladder would change the pod, without the copy
// each step makes.
func hasPreferences(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return hasTopologyPreferences(pod) || a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0
}

// hasTopologyPreferences reports whether the pod prefers where it runs relative to other pods: a
// ScheduleAnyway spread, preferred pod affinity or anti-affinity.
func hasTopologyPreferences(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			return true
		}
	}
	a := pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0)
}

// podGuards are a pending pod as the scheduler weighs it, checked beside each of its shapes (see
// preferenceLadder) in the same view: without the empty domains (its state from before the
// shapes, without, when there is one) and with them, each made once per pod.
type podGuards struct {
	pod     *corev1.Pod
	spec    string
	without fwk.CycleState
	made    [2]*asScheduled
}

// of returns the pod's guard for the view with or without the empty domains, which the simulator
// must be using.
func (g *podGuards) of(ctx context.Context, pf *preFilters, domains bool) (*asScheduled, *fwk.Status) {
	d := 0
	if domains {
		d = 1
	}
	if g.made[d] == nil {
		state := g.without
		if domains || state == nil {
			var status *fwk.Status
			if state, _, status = pf.run(ctx, g.pod, g.spec, -1, domains); status != nil {
				return nil, status
			}
		}
		g.made[d] = &asScheduled{pod: g.pod, state: state}
	}
	return g.made[d], nil
}

// requireSpread makes ScheduleAnyway spread constraints DoNotSchedule.
func requireSpread(p *corev1.Pod) bool {
	changed := false
	for i := range p.Spec.TopologySpreadConstraints {
		if c := &p.Spec.TopologySpreadConstraints[i]; c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			c.WhenUnsatisfiable = corev1.DoNotSchedule
			changed = true
		}
	}
	return changed
}

// requirePodAffinity makes preferred pod affinity terms required.
func requirePodAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil || a.PodAffinity == nil {
		return false
	}
	return requireTerms(&a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, &a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
}

// requirePodAntiAffinity makes preferred pod anti-affinity terms required.
func requirePodAntiAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	return requireTerms(&a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
}

// requireTerms moves the preferred terms to the required ones, and reports whether there were any.
func requireTerms(required *[]corev1.PodAffinityTerm, preferred *[]corev1.WeightedPodAffinityTerm) bool {
	if len(*preferred) == 0 {
		return false
	}
	for _, w := range *preferred {
		*required = append(*required, w.PodAffinityTerm)
	}
	*preferred = nil
	return true
}

// requireNodeAffinity adds the heaviest preferred node-affinity term to every required term (to
// a required term of its own when there is none).
func requireNodeAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return false
	}
	heaviest := a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0]
	for _, w := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[1:] {
		if w.Weight > heaviest.Weight {
			heaviest = w
		}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
	req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{heaviest.Preference}}
		return true
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, heaviest.Preference.MatchExpressions...)
		t.MatchFields = append(t.MatchFields, heaviest.Preference.MatchFields...)
	}
	return true
}

// book makes the claim hold pod where it was opened for a stricter shape of it.
func (oc *openClaim) book(pod *corev1.Pod) {
	if n := len(oc.pods); n > 0 && oc.pods[n-1].UID == pod.UID {
		oc.pods[n-1] = pod
		oc.lastPod = pod
	}
}
