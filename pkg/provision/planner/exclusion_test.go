package planner

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// TestExclusionLargestFirst: pods that exclude each other are planned so that at least the pods
// Karpenter's largest-first order runs, run. Three pods of 2 cpu, one pinned to each zone, and a
// pod without requests that must not share a zone with any of them (required anti-affinity on
// one side or the other): Karpenter plans the three and leaves the small one Pending with a
// reason. Planning the small pod first would lock one of the big ones out of its zone.
func TestExclusionLargestFirst(t *testing.T) {
	zone := corev1.LabelTopologyZone
	for _, side := range []string{"small repels the big", "big repel the small"} {
		// Different shapes of the big pods put them in either queue of packing.Order.
		for _, mem := range []string{"0", "1Gi", "8Gi"} {
			t.Run(fmt.Sprintf("%s, big pods of 2 cpu and %s", side, mem), func(t *testing.T) {
				var bigOpts []podOpt
				small := newPod("small", "0", "0", labelled("small"))
				if side == "small repels the big" {
					with(nil, []corev1.PodAffinityTerm{podTerm("big", zone)})(small)
				} else {
					bigOpts = append(bigOpts, with(nil, []corev1.PodAffinityTerm{podTerm("small", zone)}))
				}
				pending := []*corev1.Pod{small}
				var big []*corev1.Pod
				for _, z := range fake.Zones() {
					p := newPod("big-"+z, "2", mem, append([]podOpt{labelled("big"), nodeSelector(zone, z)}, bigOpts...)...)
					big = append(big, p)
					pending = append(pending, p)
				}
				in := Input{Pending: pending, Pools: []Pool{newPool("default")}}
				plan := testPlanner(t).Plan(context.Background(), in)
				placed := map[string]bool{}
				for _, pc := range plan.Claims {
					for _, p := range pc.Pods {
						placed[p.Name] = true
					}
				}
				for _, p := range big {
					if !placed[p.Name] {
						t.Errorf("pod %s was not placed; %s", p.Name, summary(plan))
					}
				}
				if placed[small.Name] {
					t.Errorf("pod small was placed, locking a big pod out of its zone; %s", summary(plan))
				} else {
					reasonContains(t, plan, small, "anti-affinity")
				}
				verifyPlan(t, sim, in, plan)
			})
		}
	}
}
