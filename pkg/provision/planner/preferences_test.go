package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/preferences"
)

// preferWeighted gives the pod preferred node affinity, one term per weight, each on the zone
// given beside it.
func preferWeighted(terms map[int32]string) podOpt {
	return func(p *corev1.Pod) {
		var pref []corev1.PreferredSchedulingTerm
		for _, w := range []int32{1, 50, 100, 7, 30} { // not in weight order
			if z, ok := terms[w]; ok {
				pref = append(pref, corev1.PreferredSchedulingTerm{Weight: w, Preference: corev1.NodeSelectorTerm{
					MatchExpressions: []corev1.NodeSelectorRequirement{match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, z)}}})
			}
		}
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: pref}
	}
}

// TestPreferredNodeAffinityByWeight: the heaviest preferred node-affinity term that new capacity
// can meet decides, as in Karpenter (which drops terms heaviest first) and as kube-scheduler's
// NodeAffinity score ranks nodes; a lighter term is honoured only once every heavier one is out
// of reach.
func TestPreferredNodeAffinityByWeight(t *testing.T) {
	cases := []struct {
		name  string
		terms map[int32]string
		want  string
	}{
		{name: "heaviest out of reach, next heaviest honoured", terms: map[int32]string{100: "us-east-1z", 50: fake.ZoneB, 1: fake.ZoneA}, want: fake.ZoneB},
		{name: "heaviest honoured", terms: map[int32]string{100: fake.ZoneC, 50: fake.ZoneB, 1: fake.ZoneA}, want: fake.ZoneC},
		{name: "two heaviest out of reach", terms: map[int32]string{100: "us-east-1z", 50: "us-east-1y", 7: fake.ZoneB, 1: fake.ZoneA}, want: fake.ZoneB},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", "1", "2Gi", preferWeighted(tc.terms))
			in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("default")}}
			plan := testPlanner(t).Plan(context.Background(), in)
			pc := onlyClaim(t, plan, pod)
			if zones := valuesOf(pc, corev1.LabelTopologyZone); !slices.Equal(zones, []string{tc.want}) {
				t.Errorf("claim may launch in %v; want %s, the zone of the heaviest term a NodePool can meet", zones, tc.want)
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestPreferenceLadderOrder pins the order in which shapes give up preferences (see
// preferences.Ladder): ScheduleAnyway spreads one at a time as listed, then pod-affinity terms lightest first, then
// anti-affinity terms lightest first, then node-affinity terms heaviest first, each giving way to
// the next heaviest; the pod itself last.
func TestPreferenceLadderOrder(t *testing.T) {
	term := func(app string, w int32) corev1.WeightedPodAffinityTerm {
		return corev1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: podTerm(app, corev1.LabelTopologyZone)}
	}
	pod := newPod("p", "1", "1Gi", spread("p", corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway),
		preferWeighted(map[int32]string{1: fake.ZoneA, 50: fake.ZoneB}))
	spread("p", corev1.LabelHostname, 1, corev1.ScheduleAnyway)(pod)
	pod.Spec.Affinity.PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{term("light", 10), term("heavy", 90)}}
	pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{term("anti", 5)}}
	describe := func(p *corev1.Pod) string {
		var parts []string
		for _, c := range p.Spec.TopologySpreadConstraints {
			mode := "prefers"
			if c.WhenUnsatisfiable == corev1.DoNotSchedule {
				mode = "spreads"
			}
			parts = append(parts, mode+" "+strings.TrimPrefix(c.TopologyKey, "kubernetes.io/"))
		}
		a := p.Spec.Affinity
		for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			parts = append(parts, "with "+t.LabelSelector.MatchLabels["app"])
		}
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			parts = append(parts, "without "+t.LabelSelector.MatchLabels["app"])
		}
		if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			parts = append(parts, "in "+r.NodeSelectorTerms[0].MatchExpressions[0].Values[0])
		}
		return strings.Join(parts, ", ")
	}
	var got []string
	for _, shape := range preferences.Ladder(pod) {
		got = append(got, describe(shape))
	}
	const both = "prefers topology.kubernetes.io/zone, prefers hostname"
	want := []string{
		"spreads topology.kubernetes.io/zone, spreads hostname, with heavy, with light, without anti, in " + fake.ZoneB,
		"prefers topology.kubernetes.io/zone, spreads hostname, with heavy, with light, without anti, in " + fake.ZoneB,
		both + ", with heavy, with light, without anti, in " + fake.ZoneB,
		both + ", with heavy, without anti, in " + fake.ZoneB,
		both + ", without anti, in " + fake.ZoneB,
		both + ", in " + fake.ZoneB,
		both + ", in " + fake.ZoneA,
		both,
	}
	if !slices.Equal(got, want) {
		t.Errorf("ladder:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if describe(pod) != both || len(pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 2 {
		t.Errorf("the ladder changed the pod: %s", describe(pod))
	}
}

// TestPreferNoScheduleIsTheLastPreference: a NodePool whose nodes carry a PreferNoSchedule taint
// is used for a pod that does not tolerate it only when no other NodePool can hold the pod, as
// Karpenter tolerates such taints only once every other preference is relaxed; the pool's weight
// decides for a pod that tolerates it.
func TestPreferNoScheduleIsTheLastPreference(t *testing.T) {
	avoided := func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints,
			corev1.Taint{Key: "example.com/spare", Value: "true", Effect: corev1.TaintEffectPreferNoSchedule})
	}
	pools := func() []Pool {
		return []Pool{newPool("spare", weighted(100), avoided), newPool("plain", weighted(10), requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.ZoneA))}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{name: "kept off the tainted pool", pod: newPod("p", "1", "1Gi"), want: "plain"},
		{name: "tolerated: the heavier pool", pod: newPod("p", "1", "1Gi", tolerates("example.com/spare")), want: "spare"},
		{name: "only the tainted pool holds it", pod: newPod("p", "1", "1Gi", nodeSelector(corev1.LabelTopologyZone, fake.ZoneB)), want: "spare"},
		{name: "the other preferences give way first", pod: newPod("p", "1", "1Gi", preferNodes(match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.ZoneB))), want: "plain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pending: []*corev1.Pod{tc.pod}, Pools: pools()}
			plan := testPlanner(t).Plan(context.Background(), in)
			pc := onlyClaim(t, plan, tc.pod)
			if pc.NodePool.Name != tc.want {
				t.Errorf("claim from NodePool %s, want %s", pc.NodePool.Name, tc.want)
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}
