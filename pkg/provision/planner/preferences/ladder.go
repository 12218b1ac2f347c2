package preferences

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Ladder returns the shapes in which the planner tries to place a pod on new capacity,
// strictest first, the pod itself last. As Karpenter does, a pod's preferences are honoured
// where new capacity can honour them: the first shape requires all of them (ScheduleAnyway
// spreads as DoNotSchedule, every preferred pod affinity and anti-affinity term, the heaviest
// preferred node-affinity term), and each next shape gives up one more, in this order (see
// relaxations): the ScheduleAnyway spreads, one at a time, in the order listed; the preferred
// pod-affinity terms, lightest first; the preferred anti-affinity terms, lightest first; then
// the node-affinity terms, the heaviest first, each giving way to the next heaviest, as
// Karpenter and the scheduler's NodeAffinity score rank them. PreferNoSchedule taints give way
// last (shunningViews). A shape is meant to be stricter than the pod, and the plan books the pod
// itself, never the shape. A pod without preferences has one shape: itself.
// docs/semantics-preferences.md sets this order beside Karpenter's.
//
// A shape is not always stricter, so the plan asks the Filter plugins about the pod beside it:
//   - required node affinity changes which nodes PodTopologySpread counts (nodeAffinityPolicy
//     Honor, the default): a pod that prefers spot and spreads over capacity types sees, as the
//     shape that requires spot, one capacity type and no skew, while the scheduler sees both
//     (weighed as the shape alone, such pods launched 157 NodeClaims in 90 s for three pods);
//   - a ScheduleAnyway spread made DoNotSchedule leaves the nodes without its topology key out of
//     the counts of the pod's other constraints;
//   - InterPodAffinity lets the first pod of a group go anywhere when no pod matches all of its
//     required affinity terms, and a preferred term made required can be the one that none
//     matches.
func Ladder(pod *corev1.Pod) []*corev1.Pod {
	if !Has(pod) {
		return []*corev1.Pod{pod}
	}
	steps := relaxations(pod)
	ladder := make([]*corev1.Pod, 0, len(steps)+1)
	for _, s := range steps {
		ladder = append(ladder, s.shape(pod))
	}
	return append(ladder, pod)
}

// relaxation is how much of a pod's preferences one shape requires: how many of its
// ScheduleAnyway spreads (the last listed), how many of its preferred pod-affinity and
// anti-affinity terms (the heaviest), and which preferred node-affinity term (an index in weight
// order, heaviest first; past the end: none).
type relaxation struct {
	spread, affinity, anti int
	node                   int
}

// relaxations are the steps of the pod's ladder but the last (the pod itself), each giving up
// one preference more than the one before: a pod with s ScheduleAnyway spreads, a affinity, n
// anti-affinity and k node-affinity terms has s + a + n + k of them.
func relaxations(pod *corev1.Pod) []relaxation {
	affinity, anti, node := preferredTerms(pod)
	cur := relaxation{spread: scheduleAnyway(pod), affinity: len(affinity), anti: len(anti)}
	var out []relaxation
	emit := func() {
		if cur.spread > 0 || cur.affinity > 0 || cur.anti > 0 || cur.node < len(node) {
			out = append(out, cur)
		}
	}
	emit()
	for cur.spread > 0 {
		cur.spread--
		emit()
	}
	for cur.affinity > 0 {
		cur.affinity--
		emit()
	}
	for cur.anti > 0 {
		cur.anti--
		emit()
	}
	for cur.node < len(node) {
		cur.node++
		emit()
	}
	return out
}

// shape is a copy of pod that requires what r says and prefers nothing.
func (r relaxation) shape(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	requireSpread(p, r.spread)
	affinity, anti, node := preferredTerms(p)
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			requireTerms(&a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, affinity[:r.affinity])
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.PodAntiAffinity != nil {
			requireTerms(&a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, anti[:r.anti])
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.NodeAffinity != nil {
			if r.node < len(node) {
				requireNodeTerm(a.NodeAffinity, node[r.node].Preference)
			}
			a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
	}
	return p
}

// preferredTerms returns copies of the pod's preferred pod-affinity, anti-affinity and
// node-affinity terms, each heaviest first; terms of equal weight keep the order of the spec.
func preferredTerms(pod *corev1.Pod) (affinity, anti []corev1.WeightedPodAffinityTerm, node []corev1.PreferredSchedulingTerm) {
	a := pod.Spec.Affinity
	if a == nil {
		return nil, nil, nil
	}
	byWeight := func(x, y corev1.WeightedPodAffinityTerm) int { return cmp.Compare(y.Weight, x.Weight) }
	if a.PodAffinity != nil {
		affinity = slices.Clone(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		slices.SortStableFunc(affinity, byWeight)
	}
	if a.PodAntiAffinity != nil {
		anti = slices.Clone(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		slices.SortStableFunc(anti, byWeight)
	}
	if a.NodeAffinity != nil {
		node = slices.Clone(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		slices.SortStableFunc(node, func(x, y corev1.PreferredSchedulingTerm) int { return cmp.Compare(y.Weight, x.Weight) })
	}
	return affinity, anti, node
}

// scheduleAnyway counts the pod's ScheduleAnyway spread constraints.
func scheduleAnyway(pod *corev1.Pod) int {
	n := 0
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			n++
		}
	}
	return n
}

// Has reports whether some step of the ladder would change the pod, without the copy
// each step makes.
func Has(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return HasTopology(pod) || a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0
}

// HasTopology reports whether the pod prefers where it runs relative to other pods: a
// ScheduleAnyway spread, preferred pod affinity or anti-affinity.
func HasTopology(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			return true
		}
	}
	a := pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0)
}

// requireSpread makes the last n of the pod's ScheduleAnyway spread constraints DoNotSchedule.
func requireSpread(p *corev1.Pod, n int) {
	skip := scheduleAnyway(p) - n
	for i := range p.Spec.TopologySpreadConstraints {
		if c := &p.Spec.TopologySpreadConstraints[i]; c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			if skip > 0 {
				skip--
				continue
			}
			c.WhenUnsatisfiable = corev1.DoNotSchedule
		}
	}
}

// requireTerms adds the terms to the required ones.
func requireTerms(required *[]corev1.PodAffinityTerm, terms []corev1.WeightedPodAffinityTerm) {
	for _, w := range terms {
		*required = append(*required, w.PodAffinityTerm)
	}
}

// requireNodeTerm adds the preferred term to every required node-selector term (as a required
// term of its own when there is none), so that a node passes only if it meets both.
func requireNodeTerm(na *corev1.NodeAffinity, preference corev1.NodeSelectorTerm) {
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{preference}}
		return
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, preference.MatchExpressions...)
		t.MatchFields = append(t.MatchFields, preference.MatchFields...)
	}
}
