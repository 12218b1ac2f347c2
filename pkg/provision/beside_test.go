package provision

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// TestClaimsOpenedLaterDoNotStrandTheEarlierPods: harness seed 2008. Replicas that must share a
// zone (required pod affinity to each other) and spread by zone with maxSkew 1 are placed first
// (they are the biggest), all in one zone: while that is the only zone with claims, the
// scheduler would take them all there. Jobs pinned to the two other zones come next and open
// claims there. Beside those, the scheduler takes one replica only (zone a holding two makes the
// skew 2), so the plan launches for one and says why the others wait, instead of launching
// nodes for replicas that will never bind.
func TestClaimsOpenedLaterDoNotStrandTheEarlierPods(t *testing.T) {
	const app = "web"
	zone := corev1.LabelTopologyZone
	opts := []podOpt{with([]corev1.PodAffinityTerm{podTerm(app, zone)}, nil), spread(app, zone, 1, corev1.DoNotSchedule)}
	web := replicas(4, app, "2", "6Gi", opts...)
	jobB := newPod("job-b", "250m", "768Mi", nodeSelector(zone, fake.ZoneB))
	jobC := newPod("job-c", "250m", "768Mi", nodeSelector(zone, fake.ZoneC))
	// A job that reads no zone, kept off the replicas' nodes: its claim could launch in any zone,
	// and launched in another than the replicas', it would be a domain with none of them (found
	// by review). It is settled into the replicas' zone, a domain already.
	loner := newPod("loner", "250m", "768Mi", with(nil, []corev1.PodAffinityTerm{podTerm(app, corev1.LabelHostname)}))
	for _, tc := range []struct {
		name      string
		pending   []*corev1.Pod
		placedWeb int
	}{
		{name: "alone", pending: web, placedWeb: 4},
		{name: "with jobs in the other zones", pending: append([]*corev1.Pod{jobB, jobC}, web...), placedWeb: 1},
		{name: "with a job in any zone", pending: append([]*corev1.Pod{loner}, web...), placedWeb: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pending: tc.pending, Pools: []Pool{newPool("default")}}
			pl := testPlanner(t)
			plan := pl.Plan(context.Background(), in)
			placed, seen := 0, map[string]int{}
			for _, pc := range plan.Claims {
				for _, p := range pc.Pods {
					seen[p.Name]++
					if strings.HasPrefix(p.Name, app+"-") {
						placed++
					}
				}
			}
			for _, u := range plan.Unplaceable {
				seen[u.Pod.Name]++
			}
			for _, p := range tc.pending {
				if seen[p.Name] != 1 {
					t.Errorf("pod %s is on claims or unplaceable %d times, want once; %s", p.Name, seen[p.Name], summary(plan))
				}
			}
			if placed != tc.placedWeb || len(plan.Unplaceable) != 4-tc.placedWeb {
				t.Fatalf("want %d replicas on claims and the rest unplaceable; got %s", tc.placedWeb, summary(plan))
			}
			for _, u := range plan.Unplaceable {
				reasonContains(t, plan, u.Pod, "once the plan's other nodes run", "didn't match pod topology spread constraints")
			}
			verifyPlan(t, pl.sim, in, plan)
		})
	}
}
