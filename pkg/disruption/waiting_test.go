package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// A pod that waits unplaced takes the spread slot a removal frees before the evicted pod can come
// back to it, so the removal must leave that pod room after the waiting one (harness seed 1489).
// Three replicas spread over zones with maxSkew 1: two in zone a (nodes a1, a2), one in zone b. A
// fourth waits, held to zone a, where a third replica would skew the zones by 2 (the test holds
// pods to a zone by node selector, standing in for a zonal volume). Removing a2
// sends its replica, also held to zone a, back there; but a2's removal first lets the waiting one
// into zone a, and then the evicted replica fits nowhere.
func TestRemovalLeavesRoomForThePodsThatWait(t *testing.T) {
	ctx := context.Background()
	// Every zone counts, whatever zone the pod is held to (nodeAffinityPolicy Ignore).
	ignore := corev1.NodeInclusionPolicyIgnore
	spreadZones := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector("app", "db"), NodeAffinityPolicy: &ignore}}
	}
	build := func(waiting bool) *cluster {
		c := newCluster(t, newPool("default"))
		c.node("a1", "default", odXLarge)
		c.node("a2", "default", odXLarge)
		c.node("b1", "default", offering{odXLarge.instanceType, fake.ZoneB, odXLarge.capacityType})
		c.pod("db-0", "a1", "100m", "128Mi", spreadZones, inZoneA)
		c.pod("db-1", "a2", "100m", "128Mi", spreadZones, inZoneA)
		c.pod("db-2", "b1", "100m", "128Mi", spreadZones)
		if waiting {
			c.pod("db-3", "", "100m", "128Mi", spreadZones, inZoneA)
		}
		return c
	}
	for _, rebuild := range []bool{false, true} {
		alone := build(false)
		p := newProber(alone.State, testPlanner(t))
		p.rebuild = rebuild
		if out := p.simulate(ctx, []*Candidate{candidate(t, alone.State, "a2")}); !out.OK() || len(out.Replacements) != 0 {
			t.Fatalf("rebuild=%v, no pod waiting: removing a2 gives %+v; want db-1 to fit on a1", rebuild, out)
		}
		c := build(true)
		p = newProber(c.State, testPlanner(t))
		p.rebuild = rebuild
		out := p.simulate(ctx, []*Candidate{candidate(t, c.State, "a2")})
		if out.OK() || !strings.Contains(out.Unplaceable, "default/db-1") {
			t.Errorf("rebuild=%v, db-3 waiting for zone a: removing a2 gives %+v; want db-1 to fit nowhere", rebuild, out)
		}
		for _, pod := range c.Pods {
			if pod.Name == "db-3" && pod.Spec.NodeName != "" {
				t.Errorf("the probe bound the waiting pod to %s in the State", pod.Spec.NodeName)
			}
		}
	}
}

// A spread that allows one replica in all (minDomains 3 over capacity types, where the only pool
// launches on-demand alone) runs one replica and leaves the other waiting. Replacing the running
// one's node frees that slot, and the waiting replica may take it on a node launched for it
// before the evicted one comes back: the evicted replica would fit nowhere, so the removal is
// off. No node that is up holds the waiting one (no room in zone a), so only planning the
// waiting pods onto new capacity, first, sees it (harness seed 2580, StatefulSet db-7).
func TestRemovalLeavesTheOnlySpreadSlotToTheEvictedReplica_Seed2580(t *testing.T) {
	ctx := context.Background()
	build := func(waiting bool, opts ...nodeOpt) *cluster {
		c := newCluster(t, newPool("default", onDemandOnly()))
		c.node("a1", "default", od2XLarge, opts...)
		c.node("a2", "default", odXLarge)
		c.node("b1", "default", offering{odXLarge.instanceType, fake.ZoneB, odXLarge.capacityType})
		c.pod("db-0", "a1", "1500m", "512Mi", oneInAll, inZoneA)
		c.pod("full-a2", "a2", "3500m", "1Gi", inZoneA)
		c.pod("full-b1", "b1", "3500m", "1Gi")
		if waiting {
			c.pod("db-1", "", "1500m", "512Mi", oneInAll, inZoneA)
		}
		return c
	}
	for _, rebuild := range []bool{false, true} {
		alone := build(false)
		p := newProber(alone.State, testPlanner(t))
		p.rebuild = rebuild
		if out := p.simulate(ctx, []*Candidate{candidate(t, alone.State, "a1")}); !out.OK() || len(out.Replacements) != 1 {
			t.Fatalf("rebuild=%v, no replica waiting: removing a1 gives %+v; want db-0 on one replacement", rebuild, out)
		}
		c := build(true)
		p = newProber(c.State, testPlanner(t))
		p.rebuild = rebuild
		out := p.simulate(ctx, []*Candidate{candidate(t, c.State, "a1")})
		if out.OK() || !strings.Contains(out.Unplaceable, "default/db-0") {
			t.Errorf("rebuild=%v, db-1 waiting: removing a1 gives %+v; want db-0 to fit nowhere", rebuild, out)
		}
		d := &decider{state: c.State, probe: newProber(c.State, testPlanner(t)), spotMin: 1}
		if cmd := d.consolidate(ctx, []*Candidate{candidate(t, c.State, "a1")}, "single-node consolidation", false); cmd != nil {
			t.Errorf("rebuild=%v: consolidation decided %s; want none", rebuild, describe(cmd))
		}
	}
	// Drift probes alike: a1 drifted is not replaced while db-1 waits for the slot db-0 holds.
	for _, waiting := range []bool{false, true} {
		c := build(waiting, drifted(testNow.Add(-time.Hour)))
		cmd, _ := Decide(ctx, c.State, testPlanner(t), nil, decideOpts(15))
		if replaced := cmd != nil && cmd.Reason == karpv1.DisruptionReasonDrifted; replaced == waiting {
			t.Errorf("a1 drifted, db-1 waiting=%v: decided %s", waiting, describe(cmd))
		}
	}
}

// inZoneA holds a pod to zone a.
func inZoneA(p *corev1.Pod) {
	p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: fake.ZoneA}
}

// oneInAll is the StatefulSet db of harness seed 2580: a host port, and a spread over capacity
// types with minDomains 3, which over on-demand pools alone allows one replica in all.
func oneInAll(p *corev1.Pod) {
	p.Labels = map[string]string{"app": "db"}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, MinDomains: ptr.To[int32](3),
		TopologyKey: karpv1.CapacityTypeLabelKey, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector("app", "db")}}
}
