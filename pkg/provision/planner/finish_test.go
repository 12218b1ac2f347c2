package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
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

// TestClaimsOpenInSeveralZonesAreWeighedAsTheyLaunch: the plan's node for a claim keeps only
// the labels its offerings agree on. A claim open in two zones has no zone label there, and pods
// that require one of the two zones (and have required pod affinity, so they are weighed beside
// the plan) were refused on it by NodeAffinity in a replay of harness seed 2145. The claim is
// weighed as its cheapest offering's node.
func TestClaimsOpenInSeveralZonesAreWeighedAsTheyLaunch(t *testing.T) {
	const app = "pair"
	zone := corev1.LabelTopologyZone
	pair := replicas(2, app, "500m", "1Gi", with([]corev1.PodAffinityTerm{podTerm(app, corev1.LabelHostname)}, nil),
		func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: anyOf([]corev1.NodeSelectorRequirement{match(zone, corev1.NodeSelectorOpIn, fake.ZoneA, fake.ZoneC)})}}
		})
	in := Input{Pending: pair, Pools: []Pool{newPool("default")}}
	plan := testPlanner(t).Plan(context.Background(), in)
	placedOnce(t, plan, pair)
}

// TestClaimsWaitForThePodsLaunchingBeforeThem: harness seed 2145. An earlier plan sent replicas
// that must share a zone and spread over zones (maxSkew 1) to a node launching in zone b, the
// only zone with nodes. A pod that needs zone c comes next. Its node would make zone c a domain
// with no replica, and the replicas not yet bound would be refused on the node launched for
// them; so its claim waits until they have bound, and says so.
func TestClaimsWaitForThePodsLaunchingBeforeThem(t *testing.T) {
	const app = "web"
	zone := corev1.LabelTopologyZone
	opts := []podOpt{with([]corev1.PodAffinityTerm{podTerm(app, zone)}, nil), spread(app, zone, 1, corev1.DoNotSchedule)}
	web := replicas(2, app, "1", "2Gi", opts...)
	launching := zonedNode("launching-b", fake.ZoneB, "4", "16Gi")
	destined := map[types.UID]string{}
	for _, p := range web {
		destined[p.UID] = launching.Name
	}
	jobC := newPod("job-c", "250m", "768Mi", nodeSelector(zone, fake.ZoneC))
	jobB := newPod("job-b", "4", "768Mi", nodeSelector(zone, fake.ZoneB))
	// The provisioner leaves out of a plan the pods it counts on their node in flight already.
	// Either way, the replicas are held to the node launched for them (Spared).
	counted, spared := []*corev1.Pod{}, map[types.UID]bool{}
	for _, p := range web {
		counted, spared[p.UID] = append(counted, clusterview.OnNode(p, launching.Name)), true
	}
	for _, tc := range []struct {
		name    string
		job     *corev1.Pod
		waits   bool
		counted bool
		// lapsed: the replicas' hold has ended (LaunchHold), so nothing waits for them.
		lapsed bool
	}{
		{name: "a pod for a new zone waits", job: jobC, waits: true},
		{name: "a pod for the same zone goes", job: jobB},
		{name: "a pod for a new zone waits for pods counted there", job: jobC, waits: true, counted: true},
		{name: "a pod for a new zone goes once their hold has lapsed", job: jobC, counted: true, lapsed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pending: append(slices.Clone(web), tc.job), Nodes: []*corev1.Node{launching}, Destined: destined,
				InFlight: map[string]string{launching.Name: "claim-b"}, Spared: spared, Pools: []Pool{newPool("default")}}
			if tc.counted {
				in.Pending, in.Pods, in.Destined = []*corev1.Pod{tc.job}, counted, nil
			}
			if tc.lapsed {
				in.Spared = nil
			}
			plan := testPlanner(t).Plan(context.Background(), in)
			if !tc.counted && len(plan.InFlight["claim-b"]) != len(web) {
				t.Fatalf("want the replicas on their launching node; got %s", summary(plan))
			}
			if !tc.waits {
				if len(plan.Claims) != 1 || len(plan.Unplaceable) != 0 {
					t.Fatalf("want a claim for %s; got %s", tc.job.Name, summary(plan))
				}
				return
			}
			if len(plan.Claims) != 0 || len(plan.Unplaceable) != 1 {
				t.Fatalf("want %s held back, no claim; got %s", tc.job.Name, summary(plan))
			}
			reasonContains(t, plan, tc.job, "would be the first in topology.kubernetes.io/zone=us-west-2c", "launching-b",
				"didn't match pod topology spread constraints")
		})
	}
}
