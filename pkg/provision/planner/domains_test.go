package planner

import (
	"context"
	"fmt"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
)

// TestEmptyDomainsYieldToTheScheduler: the empty domains (domains.go) are Karpenter's count, not
// the scheduler's. Where they leave a pod no new capacity, the plan weighs it as the scheduler
// will: against the nodes there are and the claims of the plan. Harness seed 1413: replicas that
// must share a zone (required pod affinity to each other) and spread over two zones with maxSkew
// 1, one per node (a host port). Against an empty zone b, the second replica fits nowhere: zone a
// makes the skew 2, zone b breaks the affinity. The scheduler knows no zone b until a node is
// there, and takes every replica on a new node in zone a.
func TestEmptyDomainsYieldToTheScheduler(t *testing.T) {
	const app = "db"
	zone := corev1.LabelTopologyZone
	a, b := fake.ZoneA, fake.ZoneB
	opts := []podOpt{
		with([]corev1.PodAffinityTerm{podTerm(app, zone)}, nil),
		// requireNodes would replace the pod affinity.
		func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: anyOf([]corev1.NodeSelectorRequirement{match(zone, corev1.NodeSelectorOpIn, a, b)})}}
		},
		spread(app, zone, 1, corev1.DoNotSchedule),
		hostPort(8080, corev1.ProtocolTCP, ""),
	}
	// A node in zone a, full, running one replica; an empty node in zone b, which makes zone b a
	// domain for the scheduler too.
	full := zonedNode("full", a, "1", "2Gi")
	running := clusterview.OnNode(newPod("running", "1", "1Gi", append([]podOpt{labelled(app)}, opts...)...), "full")
	emptyB := zonedNode("empty-b", b, "8", "32Gi")
	cases := []struct {
		name    string
		nodes   []*corev1.Node
		running []*corev1.Pod
		// perZone counts the pending pods per zone their claims settle in; "*" is any one zone.
		perZone     map[string]int
		unplaceable int
	}{
		{name: "none running", perZone: map[string]int{"*": 4}},
		{name: "one running in zone a", nodes: []*corev1.Node{full}, running: []*corev1.Pod{running}, perZone: map[string]int{a: 4}},
		// Zone b is a domain with no replica: the scheduler refuses zone a (skew 2) and zone b
		// (affinity), and so does the plan.
		{name: "one running in zone a, a node in zone b", nodes: []*corev1.Node{full, emptyB}, running: []*corev1.Pod{running},
			perZone: map[string]int{}, unplaceable: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pending := replicas(4, app, "1", "1Gi", opts...)
			in := Input{Pending: pending, Nodes: tc.nodes, Pods: tc.running, Pools: []Pool{newPool("default")}}
			plan := testPlanner(t).Plan(context.Background(), in)
			if len(plan.Unplaceable) != tc.unplaceable || len(plan.FitsExisting) != 0 {
				t.Fatalf("want %d pods unplaceable, none on existing nodes; got %s", tc.unplaceable, summary(plan))
			}
			for _, u := range plan.Unplaceable {
				reasonContains(t, plan, u.Pod, "didn't match pod topology spread constraints", "didn't match pod affinity rules")
			}
			got := podsPerDomain(t, plan, zone)
			if _, anyZone := tc.perZone["*"]; anyZone && len(got) == 1 {
				for _, n := range got {
					got = map[string]int{"*": n}
				}
			}
			if !maps.Equal(got, tc.perZone) {
				t.Errorf("pods per zone: %v, want %v; %s", got, tc.perZone, summary(plan))
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestSpreadingPodsWaitForAClaimThatMayOpenADomain: harness seed 2404 again. One of the Job's
// pods runs in zone c, the only zone with nodes; a claim for other pods is in flight, open in all
// three zones. Weighed as the scheduler sees the cluster now, the rest fit new nodes in zone c;
// but once the claim launches in another zone, the spread refuses them there. They wait for the
// claim to launch. Settled in zone c, it adds no domain, and they go.
func TestSpreadingPodsWaitForAClaimThatMayOpenADomain(t *testing.T) {
	const app = "job"
	zone := corev1.LabelTopologyZone
	job := func(i int) *corev1.Pod {
		return newPod(fmt.Sprintf("job-%d", i), "1500m", "1Gi", labelled(app), hostPort(8080, corev1.ProtocolTCP, ""),
			with([]corev1.PodAffinityTerm{podTerm(app, zone)}, nil), spread(app, zone, 1, corev1.DoNotSchedule))
	}
	running := zonedNode("running-c", fake.ZoneC, "2", "8Gi")
	pool := newPool("default")
	for _, tc := range []struct {
		name   string
		zones  []string
		placed int
	}{
		{name: "open in three zones", zones: []string{fake.ZoneA, fake.ZoneB, fake.ZoneC}, placed: 0},
		{name: "settled in the zone there is", zones: []string{fake.ZoneC}, placed: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := launchingIn("claim-other", tc.zones[0])
			claim.Spec.Requirements[0].Values = tc.zones
			first := job(0)
			c := &clusterview.Cluster{Nodes: []*corev1.Node{running}, Pods: []*corev1.Pod{clusterview.OnNode(first, running.Name)}, Claims: []*karpv1.NodeClaim{claim}}
			v := c.View(map[string][]*cloud.InstanceType{"default": pool.InstanceTypes})
			pending := []*corev1.Pod{job(1), job(2), job(3)}
			in := Input{Pending: pending, Nodes: v.Nodes, Pods: v.Pods, InFlight: v.InFlight, Unsettled: v.Unsettled, Pools: []Pool{pool}}
			plan := testPlanner(t).Plan(context.Background(), in)
			if placed := len(pending) - len(plan.Unplaceable); placed != tc.placed {
				t.Fatalf("%d of the Job's pods placed, want %d: %s", placed, tc.placed, summary(plan))
			}
			if tc.placed == 0 {
				reasonContains(t, plan, pending[0], "NodeClaim in flight may still launch in a new domain")
			}
		})
	}
}
