package disruption

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// Two replicas that must share a zone (required pod affinity by zone to each other) run on c1,
// in zone c; a1 in zone a has room for both. With a budget that lets both go at once, removing c1
// moves them to a1: once both are gone, the first to come back may go anywhere. With one that
// lets one go at a time, the first comes back while the other still runs in zone c, so the
// removal must find them room in zone c (harness seed 1815, where the pod stayed Pending and the
// node draining).
func TestRemovalMovesAffineSiblingsInTurns(t *testing.T) {
	ctx := context.Background()
	sameZone := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{LabelSelector: selector("app", "web"), TopologyKey: corev1.LabelTopologyZone}}}}
	}
	build := func(allowed int32) *cluster {
		c := newCluster(t, newPool("default"))
		c.node("a1", "default", od2XLarge)
		c.node("c1", "default", offering{odXLarge.instanceType, fake.ZoneC, odXLarge.capacityType})
		c.pod("web-0", "c1", "1", "1Gi", sameZone)
		c.pod("web-1", "c1", "1", "1Gi", sameZone)
		c.pdb("web", "default", allowed, selector("app", "web"))
		return c
	}
	for _, rebuild := range []bool{false, true} {
		// A tight budget over web-1 and an unrelated pod leaves web-0 free to go with it: no hold.
		c := build(2)
		c.PDBs = nil
		c.pod("other", "c1", "100m", "128Mi", podLabeled("tier", "x"))
		c.Pods[1].Labels["tier"] = "x"
		c.pdb("tier", "default", 1, selector("tier", "x"))
		p := newProber(c.State, testPlanner(t))
		p.rebuild = rebuild
		if out := p.simulate(ctx, []*Candidate{candidate(t, c.State, "c1")}); !out.OK() || len(out.Replacements) != 0 {
			t.Errorf("rebuild=%v, web-0 free to go: removing c1 gives %+v; want both on a1", rebuild, out)
		}
		c = build(2)
		p = newProber(c.State, testPlanner(t))
		p.rebuild = rebuild
		if out := p.simulate(ctx, []*Candidate{candidate(t, c.State, "c1")}); !out.OK() || len(out.Replacements) != 0 {
			t.Errorf("rebuild=%v, both may go at once: removing c1 gives %+v; want both on a1", rebuild, out)
		}
		c = build(1)
		p = newProber(c.State, testPlanner(t))
		p.rebuild = rebuild
		out := p.simulate(ctx, []*Candidate{candidate(t, c.State, "c1")})
		if !out.OK() {
			continue // no room in zone c at all is a right answer too
		}
		if len(out.Replacements) == 0 {
			t.Errorf("rebuild=%v, one at a time: removing c1 moves both to a1, where the first evicted is refused", rebuild)
			continue
		}
		for _, r := range out.Replacements {
			for _, o := range r.Options {
				if o.Offering.Zone != fake.ZoneC {
					t.Errorf("rebuild=%v, one at a time: the replacement may launch in %s; the pods must stay in zone c", rebuild, o.Offering.Zone)
					break
				}
			}
			if !slices.ContainsFunc(r.Pods, func(p *corev1.Pod) bool { return p.Name == "web-0" }) {
				t.Errorf("rebuild=%v: the replacement does not hold web-0", rebuild)
			}
		}
	}
}
