package planner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
)

func match(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func anyOf(terms ...[]corev1.NodeSelectorRequirement) []corev1.NodeSelectorTerm {
	out := make([]corev1.NodeSelectorTerm, len(terms))
	for i, reqs := range terms {
		out[i] = corev1.NodeSelectorTerm{MatchExpressions: reqs}
	}
	return out
}

// requireNodes gives the pod required node affinity: the terms are ORed, the requirements of a
// term ANDed.
func requireNodes(terms ...[]corev1.NodeSelectorRequirement) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: anyOf(terms...)}}}
	}
}

// preferNodes gives the pod preferred node affinity, one term of weight 100.
func preferNodes(reqs ...corev1.NodeSelectorRequirement) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: reqs}}}}}
	}
}

func labelInt(it *cloud.InstanceType, key string) int {
	n, _ := strconv.Atoi(it.Labels[key])
	return n
}

// TestConstraintNodeAffinity places one pod with required node affinity, one operator at a
// time, and checks the claim's options against the catalog read by hand: exactly the offerings
// that hold the pod and satisfy the affinity, cheapest first; or, when the terms pair zones with
// types (a NodeClaim cannot say "this type in that zone"), offerings that satisfy it, the
// cheapest of them first. TestPlanOnePod covers node selectors on well-known labels.
func TestConstraintNodeAffinity(t *testing.T) {
	cases := []struct {
		name string
		pod  []podOpt
		pool []poolOpt
		keep func(*cloud.InstanceType, cloud.Offering) bool
		// exact: the options are every offering keep allows (up to MaxInstanceTypes types).
		exact bool
		// refused is what the reason of an unplaceable pod must say.
		refused string
	}{
		{name: "In", pod: []podOpt{requireNodes([]corev1.NodeSelectorRequirement{match(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m6i", "c7g")})},
			keep: family("m6i", "c7g"), exact: true},
		{name: "NotIn", pod: []podOpt{requireNodes([]corev1.NodeSelectorRequirement{match(corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, fake.ZoneA, fake.ZoneB)})},
			keep: func(_ *cloud.InstanceType, o cloud.Offering) bool { return o.Zone == fake.ZoneC }, exact: true},
		{name: "Exists", pod: []podOpt{requireNodes([]corev1.NodeSelectorRequirement{match(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpExists)})},
			keep: func(it *cloud.InstanceType, _ cloud.Offering) bool {
				return it.Labels[awsv1.LabelInstanceGPUCount] != ""
			}, exact: true},
		// The NodePool offers g5 and m5 only: without GPUs, m5.
		{name: "DoesNotExist", pod: []podOpt{requireNodes([]corev1.NodeSelectorRequirement{match(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpDoesNotExist)})},
			pool: []poolOpt{requirement(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "g5", "m5")},
			keep: family("m5"), exact: true},
		{name: "Gt", pod: []podOpt{requireNodes([]corev1.NodeSelectorRequirement{match(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpGt, "8")})},
			keep: func(it *cloud.InstanceType, _ cloud.Offering) bool { return labelInt(it, awsv1.LabelInstanceCPU) > 8 }, exact: true},
		{name: "Lt", pod: []podOpt{requireNodes([]corev1.NodeSelectorRequirement{match(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpLt, "6")})},
			keep: func(it *cloud.InstanceType, _ cloud.Offering) bool {
				return labelInt(it, awsv1.LabelInstanceGeneration) < 6
			}, exact: true},
		{name: "Gt and Lt in one term", pod: []podOpt{requireNodes([]corev1.NodeSelectorRequirement{
			match(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpGt, "4"), match(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpLt, "32")})},
			keep: func(it *cloud.InstanceType, _ cloud.Offering) bool {
				n := labelInt(it, awsv1.LabelInstanceCPU)
				return n > 4 && n < 32
			}, exact: true},
		// Terms are ORed: arm64 in zone a, or r6i in zone c.
		{name: "two terms", pod: []podOpt{requireNodes(
			[]corev1.NodeSelectorRequirement{match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.ZoneA), match(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")},
			[]corev1.NodeSelectorRequirement{match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.ZoneC), match(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "r6i")})},
			keep: func(it *cloud.InstanceType, o cloud.Offering) bool {
				return (o.Zone == fake.ZoneA && it.Labels[corev1.LabelArchStable] == "arm64") || (o.Zone == fake.ZoneC && it.Labels[awsv1.LabelInstanceFamily] == "r6i")
			}},
		// The NodePool is amd64 only: the first term can never match, the second can.
		{name: "two terms, one the NodePool rules out", pod: []podOpt{requireNodes(
			[]corev1.NodeSelectorRequirement{match(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")},
			[]corev1.NodeSelectorRequirement{match(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m6i")})},
			pool: []poolOpt{requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")},
			keep: family("m6i"), exact: true},
		{name: "NodePool requirement Gt", pool: []poolOpt{requirement(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpGt, "16")},
			keep: func(it *cloud.InstanceType, _ cloud.Offering) bool { return labelInt(it, awsv1.LabelInstanceCPU) > 16 }, exact: true},
		{name: "NodePool requirement NotIn", pool: []poolOpt{requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpNotIn, karpv1.CapacityTypeSpot)},
			keep: func(_ *cloud.InstanceType, o cloud.Offering) bool {
				return o.CapacityType == karpv1.CapacityTypeOnDemand
			}, exact: true},
		{name: "no type is big enough", pod: []podOpt{requireNodes([]corev1.NodeSelectorRequirement{match(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpGt, "1000")})},
			refused: "requirement keys with no compatible offering: " + awsv1.LabelInstanceCPU + " Gt [1000]"},
		{name: "pod and NodePool disagree", pod: []podOpt{nodeSelector(corev1.LabelArchStable, "arm64")},
			pool:    []poolOpt{requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")},
			refused: "requirement keys with no compatible offering: " + corev1.LabelArchStable + " In [arm64]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", "1", "2Gi", tc.pod...)
			in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("default", tc.pool...)}}
			plan := testPlanner(t).Plan(context.Background(), in)
			if tc.refused != "" {
				if len(plan.Claims) != 0 {
					t.Fatalf("want the pod unplaceable; got %s", summary(plan))
				}
				reasonContains(t, plan, pod, tc.refused)
				return
			}
			pc := onlyClaim(t, plan, pod)
			if tc.exact {
				sameOptions(t, pc, []*corev1.Pod{pod}, tc.keep)
			} else {
				everyOption(t, pc, "allowed by the pod's affinity", tc.keep)
				if _, cheapest := offeringsHolding([]*corev1.Pod{pod}, tc.keep); pc.Options[0].Offering.PricePerHour != cheapest {
					t.Errorf("cheapest option costs %v; the cheapest allowed offering costs %v", pc.Options[0].Offering.PricePerHour, cheapest)
				}
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestConstraintPreferredNodeAffinity: Karpenter treats a preferred node affinity term as
// required while some NodePool can satisfy it, and drops it when none can.
func TestConstraintPreferredNodeAffinity(t *testing.T) {
	t.Run("honoured when a NodePool can", func(t *testing.T) {
		pod := newPod("p", "1", "2Gi", preferNodes(match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.ZoneB)))
		in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("default")}}
		plan := testPlanner(t).Plan(context.Background(), in)
		pc := onlyClaim(t, plan, pod)
		if zones := valuesOf(pc, corev1.LabelTopologyZone); !slices.Equal(zones, []string{fake.ZoneB}) {
			t.Errorf("claim may launch in %v; the pod prefers %s, which the NodePool offers", zones, fake.ZoneB)
		}
	})
	t.Run("relaxed when no NodePool can", func(t *testing.T) {
		pod := newPod("p", "1", "2Gi", preferNodes(match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-east-1a")))
		in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("default")}}
		plan := testPlanner(t).Plan(context.Background(), in)
		pc := onlyClaim(t, plan, pod)
		sameOptions(t, pc, []*corev1.Pod{pod}, anyOffering)
		verifyPlan(t, sim, in, plan)
	})
}

// TestPreferredNodeAffinityKeepsTheSpreadsDomains: a preference made a requirement must not change
// how a spread constraint counts. PodTopologySpread counts only the nodes that match the pod's
// required node affinity (nodeAffinityPolicy Honor, the default), so a shape that requires spot
// sees one capacity-type domain and no skew, where the scheduler, counting the pod as it is, sees
// two. Seed 1708 launched 157 spot claims this way, each refused by the spread.
func TestPreferredNodeAffinityKeepsTheSpreadsDomains(t *testing.T) {
	const app = "db"
	ct := karpv1.CapacityTypeLabelKey
	spot, onDemand := karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand
	preferSpot := preferNodes(match(ct, corev1.NodeSelectorOpIn, spot))
	dns := corev1.DoNotSchedule
	t.Run("from nothing", func(t *testing.T) {
		pending := replicas(4, app, "500m", "512Mi", preferSpot, spread(app, ct, 1, dns))
		in := Input{Pending: pending, Pools: []Pool{newPool("default")}}
		plan := testPlanner(t).Plan(context.Background(), in)
		placedOnce(t, plan, pending)
		if got := podsPerDomain(t, plan, ct); got[spot] != 2 || got[onDemand] != 2 {
			t.Errorf("pods per capacity type: %v, want 2 and 2; %s", got, summary(plan))
		}
		verifyPlan(t, sim, in, plan)
	})
	// Three replicas run on spot nodes and one on an on-demand node, each node full: a fourth on
	// spot would make the skew 3.
	t.Run("beside running replicas", func(t *testing.T) {
		var nodes []*corev1.Node
		var running []*corev1.Pod
		for i, capacity := range []string{spot, spot, spot, onDemand} {
			n := zonedNode(fmt.Sprintf("n%d", i), fake.ZoneA, "500m", "1Gi")
			n.Labels[ct] = capacity
			nodes = append(nodes, n)
			running = append(running, clusterview.OnNode(newPod(fmt.Sprintf("running-%d", i), "500m", "512Mi", labelled(app)), n.Name))
		}
		pending := replicas(1, app, "500m", "512Mi", preferSpot, spread(app, ct, 2, dns))
		in := Input{Pending: pending, Nodes: nodes, Pods: running, Pools: []Pool{newPool("default")}}
		plan := testPlanner(t).Plan(context.Background(), in)
		pc := onlyClaim(t, plan, pending...)
		if got := valuesOf(pc, ct); !slices.Equal(got, []string{onDemand}) {
			t.Errorf("the claim may launch as %v; only on-demand keeps the skew within 2", got)
		}
		verifyPlan(t, sim, in, plan)
	})
}
