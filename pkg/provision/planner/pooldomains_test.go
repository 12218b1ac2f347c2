package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

// TestDomainsNodePoolsCanCreate: the values of a topology key that NodePools allow, through their
// requirements and template labels, are domains of a spread before any node carries them, as in
// Karpenter's topology. Which pools count for a pod is the plugin's to say: the empty domains
// carry each pool's labels and taints, so nodeAffinityPolicy and nodeTaintsPolicy pick them as
// they pick nodes.
func TestDomainsNodePoolsCanCreate(t *testing.T) {
	const key = "capacity-spread"
	dns := corev1.DoNotSchedule
	spot := newPool("spot", requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot),
		requirement(key, corev1.NodeSelectorOpIn, "2", "3", "4", "5"))
	onDemand := newPool("on-demand", requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
		requirement(key, corev1.NodeSelectorOpIn, "1"))
	// The same split, the on-demand value given by a template label instead of a requirement.
	onDemandLabelled := newPool("on-demand", requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand))
	onDemandLabelled.NodePool.Spec.Template.Labels = map[string]string{key: "1"}
	// Two tainted pools that share the value foo and own bar and baz.
	const label, taintKey = "fake-label", "taint-key"
	shared := func(i int, values ...string) Pool {
		return newPool(fmt.Sprintf("pool-%d", i), requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpExists),
			requirement(label, corev1.NodeSelectorOpIn, values...),
			tainted(corev1.Taint{Key: taintKey, Value: fmt.Sprintf("nodepool-%d", i), Effect: corev1.TaintEffectNoSchedule}))
	}
	toleratesPool := func(i int) podOpt {
		return tolerating(corev1.Toleration{Key: taintKey, Operator: corev1.TolerationOpEqual, Value: fmt.Sprintf("nodepool-%d", i), Effect: corev1.TaintEffectNoSchedule})
	}
	plainFoo := newPool("plain", requirement(label, corev1.NodeSelectorOpIn, "foo"))
	taintedBar := newPool("tainted", requirement(label, corev1.NodeSelectorOpIn, "bar"), taint(taintKey))
	honour := spread("web", label, 1, dns, taintsPolicy(corev1.NodeInclusionPolicyHonor))
	cases := []struct {
		name    string
		pools   []Pool
		pending []*corev1.Pod
		key     string
		// want counts the pods per domain of key; pool names the pool of each domain's claims
		// when set; shape, when set, is want's counts sorted, for cases where Karpenter pins the
		// multiset and not which value gets which count.
		want        map[string]int
		pool        map[string]string
		shape       []int
		unplaceable int
	}{
		{name: "spot to on-demand ratio over a custom key", pools: []Pool{spot, onDemand},
			pending: replicas(20, "web", "500m", "512Mi", spread("web", key, 1, dns)), key: key,
			want: map[string]int{"1": 4, "2": 4, "3": 4, "4": 4, "5": 4},
			pool: map[string]string{"1": "on-demand", "2": "spot", "3": "spot", "4": "spot", "5": "spot"}},
		{name: "the on-demand value from a template label", pools: []Pool{spot, onDemandLabelled},
			pending: replicas(20, "web", "500m", "512Mi", spread("web", key, 1, dns)), key: key,
			want: map[string]int{"1": 4, "2": 4, "3": 4, "4": 4, "5": 4},
			pool: map[string]string{"1": "on-demand", "2": "spot", "3": "spot", "4": "spot", "5": "spot"}},
		// Karpenter treats ScheduleAnyway as required until it cannot be met (preferences.go).
		{name: "ScheduleAnyway over the custom key", pools: []Pool{spot, onDemand},
			pending: replicas(20, "web", "500m", "512Mi", spread("web", key, 1, corev1.ScheduleAnyway)), key: key,
			want: map[string]int{"1": 4, "2": 4, "3": 4, "4": 4, "5": 4}},
		// nodeAffinityPolicy Honor (the default): pods that need spot count the spot pool's values.
		{name: "pods that select spot count the spot pool's values", pools: []Pool{spot, onDemand},
			pending: replicas(8, "web", "500m", "512Mi", nodeSelector(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot), spread("web", key, 1, dns)), key: key,
			want: map[string]int{"2": 2, "3": 2, "4": 2, "5": 2}},
		// Five values, fewer than minDomains: the global minimum is 0, so each takes one replica.
		{name: "minDomains above the values the pools offer", pools: []Pool{spot, onDemand},
			pending: replicas(6, "web", "500m", "512Mi", spread("web", key, 1, dns, minDomains(6))), key: key,
			want: map[string]int{"1": 1, "2": 1, "3": 1, "4": 1, "5": 1}, unplaceable: 1},
		// Karpenter's "mutually exclusive NodePools (by taints) share domains": each group of pods
		// counts the nodes it tolerates, so two spread over foo and bar, four over foo and baz.
		{name: "tainted pools share a value, nodeTaintsPolicy Honor", pools: []Pool{shared(0, "foo", "bar"), shared(1, "foo", "baz")},
			pending: append(replicas(2, "web", "500m", "512Mi", honour, toleratesPool(0)),
				renamed("other", replicas(4, "web", "500m", "512Mi", honour, toleratesPool(1)))...),
			key: label, shape: []int{1, 2, 3}},
		// Karpenter's "discovered from the nodepool (NodeTaintsPolicy=ignore)": the tainted pool's
		// value bar counts, and no pod can go there. Karpenter leaves the second replica Pending;
		// the scheduler, which knows only the nodes there are, takes it in foo, and so does the
		// plan (domains.go: the empty domains yield to the scheduler's view).
		{name: "a tainted pool's value under nodeTaintsPolicy Ignore", pools: []Pool{plainFoo, taintedBar},
			pending: replicas(2, "web", "500m", "512Mi", spread("web", label, 1, dns, taintsPolicy(corev1.NodeInclusionPolicyIgnore))), key: label,
			want: map[string]int{"foo": 2}},
		// Zones a pool's template label pins count alone.
		{name: "zone spread in a pool held to one zone by its template label", pools: []Pool{zoneLabelled(fake.ZoneB)},
			pending: replicas(3, "web", "500m", "512Mi", spread("web", corev1.LabelTopologyZone, 1, dns)), key: corev1.LabelTopologyZone,
			want: map[string]int{fake.ZoneB: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pending: tc.pending, Pools: tc.pools}
			plan := testPlanner(t).Plan(context.Background(), in)
			if tc.unplaceable == 0 {
				placedOnce(t, plan, tc.pending)
			} else if len(plan.Unplaceable) != tc.unplaceable {
				t.Fatalf("want %d pods unplaceable; got %s", tc.unplaceable, summary(plan))
			}
			for _, u := range plan.Unplaceable {
				reasonContains(t, plan, u.Pod, "didn't match pod topology spread constraints")
			}
			got := podsPerDomain(t, plan, tc.key)
			if tc.shape != nil {
				counts := slices.Sorted(maps.Values(got))
				if !slices.Equal(counts, tc.shape) {
					t.Errorf("pods per %s: %v, want the counts %v; %s", tc.key, got, tc.shape, summary(plan))
				}
			} else if !maps.Equal(got, tc.want) {
				t.Errorf("pods per %s: %v, want %v; %s", tc.key, got, tc.want, summary(plan))
			}
			for _, pc := range plan.Claims {
				v := settledOn(t, pc, tc.key)
				if want, ok := tc.pool[v]; ok && pc.NodePool.Name != want {
					t.Errorf("a claim in %s=%s comes from NodePool %s, want %s", tc.key, v, pc.NodePool.Name, want)
				}
				// The NodeClaim says which domain its node is in: the cloud cannot pick another.
				claim := nodeclaim.New(pc)
				if tc.key != corev1.LabelTopologyZone && claim.Labels[tc.key] != v {
					t.Errorf("NodeClaim labels %s=%q, want %q", tc.key, claim.Labels[tc.key], v)
				}
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestTemplateLabelsAreRequirements: a NodePool's template labels hold its nodes to those values
// as requirements do, well-known keys included: a pool labelled with a zone launches there only,
// and a pod that needs another zone is refused by it.
func TestTemplateLabelsAreRequirements(t *testing.T) {
	zone := corev1.LabelTopologyZone
	pool := zoneLabelled(fake.ZoneB)
	t.Run("launches in the labelled zone", func(t *testing.T) {
		pending := replicas(3, "web", "500m", "512Mi")
		in := Input{Pending: pending, Pools: []Pool{pool}}
		plan := testPlanner(t).Plan(context.Background(), in)
		placedOnce(t, plan, pending)
		for _, pc := range plan.Claims {
			everyOption(t, pc, "in "+fake.ZoneB, func(_ *cloud.InstanceType, o cloud.Offering) bool { return o.Zone == fake.ZoneB })
			claim := nodeclaim.New(pc)
			if claim.Labels[zone] != fake.ZoneB {
				t.Errorf("NodeClaim labels %s=%q, want %q", zone, claim.Labels[zone], fake.ZoneB)
			}
		}
		verifyPlan(t, sim, in, plan)
	})
	t.Run("refuses a pod that needs another zone", func(t *testing.T) {
		pod := newPod("p", "500m", "512Mi", nodeSelector(zone, fake.ZoneA))
		plan := testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}})
		if len(plan.Claims) != 0 || len(plan.Unplaceable) != 1 {
			t.Fatalf("want the pod unplaceable; got %s", summary(plan))
		}
		if reasonsOf(t, plan, pod)[pool.NodePool.Name] == "" {
			t.Errorf("no reason given for NodePool %s", pool.NodePool.Name)
		}
	})
}

// zoneLabelled is a NodePool whose template labels put its nodes in zone.
func zoneLabelled(zone string) Pool {
	p := newPool("zoned")
	p.NodePool.Spec.Template.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	return p
}

// renamed gives the pods names and UIDs that start with prefix, to mix two sets of replicas.
func renamed(prefix string, pods []*corev1.Pod) []*corev1.Pod {
	for i, p := range pods {
		p.Name = fmt.Sprintf("%s-%d", prefix, i)
		p.UID = types.UID("uid-" + p.Name)
	}
	return pods
}

// TestDomainsBesideAClaimInFlight: the ratio recipe planned in two batches, as a ReplicaSet
// creates its pods. The first replica's claim, in value 1, is in flight; the other values are
// still only values the spot pool can create, and the rest of the replicas spread over all five,
// under ScheduleAnyway too, which Karpenter treats as required until it cannot be met.
func TestDomainsBesideAClaimInFlight(t *testing.T) {
	const key = "capacity-spread"
	spot := newPool("spot", requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot),
		requirement(key, corev1.NodeSelectorOpIn, "2", "3", "4", "5"))
	onDemand := newPool("on-demand", requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
		requirement(key, corev1.NodeSelectorOpIn, "1"))
	for _, when := range []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway} {
		t.Run(string(when), func(t *testing.T) {
			first := zonedNode("on-demand-1", fake.ZoneA, "16", "64Gi")
			first.Labels[key], first.Labels[karpv1.CapacityTypeLabelKey], first.Labels[karpv1.NodePoolLabelKey] = "1", karpv1.CapacityTypeOnDemand, "on-demand"
			all := replicas(20, "web", "500m", "512Mi", spread("web", key, 1, when))
			in := Input{Pending: all[1:], Nodes: []*corev1.Node{first}, Pods: []*corev1.Pod{clusterview.OnNode(all[0], first.Name)},
				InFlight: map[string]string{first.Name: "claim-1"}, Pools: []Pool{onDemand, spot}}
			plan := testPlanner(t).Plan(context.Background(), in)
			if len(plan.Unplaceable) != 0 || len(plan.FitsExisting) != 0 {
				t.Fatalf("want every pod on capacity in flight or new; got %s", summary(plan))
			}
			got := podsPerDomain(t, plan, key)
			got["1"] += 1 + len(plan.InFlight["claim-1"])
			if want := map[string]int{"1": 4, "2": 4, "3": 4, "4": 4, "5": 4}; !maps.Equal(got, want) {
				t.Errorf("replicas per %s: %v, want %v; %s", key, got, want, summary(plan))
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}
