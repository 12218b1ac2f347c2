package planner

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

// TestConstraintNodeSelectorCustomLabels: a pod that selects a label that is not an instance
// type's goes to a NodePool whose nodes will carry it, and the NodeClaim carries it too. Where
// the NodePool's requirement on the key allows several values or any, Karpenter narrows each
// NodeClaim's requirements by its pods' and labels the node with the value left (its scheduling
// docs, "Exists operator"): pods that select different values never share a node, pods that
// select the same value or none may.
func TestConstraintNodeSelectorCustomLabels(t *testing.T) {
	const team = "example.com/team"
	labelled := newPool("labelled")
	labelled.NodePool.Spec.Template.Labels = map[string]string{team: "payments"}
	teams := func(opts ...poolOpt) Pool {
		return newPool("teams", append([]poolOpt{requirement(team, corev1.NodeSelectorOpIn, "payments", "search")}, opts...)...)
	}
	anyTeam := func(opts ...poolOpt) Pool {
		return newPool("teams", append([]poolOpt{requirement(team, corev1.NodeSelectorOpExists)}, opts...)...)
	}
	selects := func(name, value string) *corev1.Pod { return newPod(name, "1", "2Gi", nodeSelector(team, value)) }
	requires := func(name string, op corev1.NodeSelectorOperator, values ...string) *corev1.Pod {
		return newPod(name, "1", "2Gi", requireNodes([]corev1.NodeSelectorRequirement{match(team, op, values...)}))
	}
	cases := []struct {
		name  string
		pools []Pool
		// pending is one pod p that selects value unless set.
		pending []*corev1.Pod
		value   string
		// pool is the NodePool every claim must come from; claims maps the team label of each
		// claim to its pods ("" for no label), one pod p labelled value unless set.
		pool    string
		claims  map[string][]string
		refused string
	}{
		{name: "template label", pools: []Pool{newPool("plain", weighted(50)), labelled}, pool: "labelled", value: "payments"},
		{name: "requirement with one value", pools: []Pool{newPool("plain", weighted(50)), newPool("pinned", requirement(team, corev1.NodeSelectorOpIn, "payments"))},
			pool: "pinned", value: "payments"},
		{name: "requirement with several values", pools: []Pool{teams()}, pool: "teams", value: "search"},
		{name: "requirement Exists", pools: []Pool{anyTeam()}, pool: "teams", value: "search"},
		// The pod rules out one of the pool's values: it gets the other.
		{name: "NotIn", pools: []Pool{teams()}, pending: []*corev1.Pod{requires("p", corev1.NodeSelectorOpNotIn, "payments")},
			pool: "teams", claims: map[string][]string{"search": {"p"}}},
		{name: "affinity In on a requirement Exists", pools: []Pool{anyTeam()}, pending: []*corev1.Pod{requires("p", corev1.NodeSelectorOpIn, "a")},
			pool: "teams", claims: map[string][]string{"a": {"p"}}},
		{name: "two pods, two values: two claims", pools: []Pool{teams()}, pending: []*corev1.Pod{selects("pay", "payments"), selects("find", "search")},
			pool: "teams", claims: map[string][]string{"payments": {"pay"}, "search": {"find"}}},
		{name: "two pods, one value: one claim", pools: []Pool{teams()}, pending: []*corev1.Pod{selects("a", "search"), selects("b", "search")},
			pool: "teams", claims: map[string][]string{"search": {"a", "b"}}},
		// A pod that does not read the key leaves the claim open for one that selects a value;
		// alone, its node gets the first value the pool lists, as every node of the pool must
		// carry one.
		{name: "a pod that does not select shares", pools: []Pool{teams()}, pending: []*corev1.Pod{newPod("any", "1", "2Gi"), selects("find", "search")},
			pool: "teams", claims: map[string][]string{"search": {"any", "find"}}},
		{name: "a pod that does not select, alone", pools: []Pool{teams()}, pending: []*corev1.Pod{newPod("any", "1", "2Gi")},
			pool: "teams", claims: map[string][]string{"payments": {"any"}}},
		{name: "a value the NodePool does not allow", pools: []Pool{teams()}, value: "ops",
			refused: "requirement keys with no compatible offering: " + team + " In [ops] (NodePool offers [payments search])"},
		{name: "no NodePool carries the label", pools: []Pool{newPool("plain"), labelled}, value: "search",
			refused: "requirement keys with no compatible offering: " + team + " In [search]"},
		// Any value would do for the pod and the pool: Tailor makes none up (see unlabelledReason).
		{name: "Exists on a requirement Exists", pools: []Pool{anyTeam()}, pending: []*corev1.Pod{requires("p", corev1.NodeSelectorOpExists)},
			refused: "requirement keys with no compatible offering: " + team + " (the NodePool allows any value of it, Exists, and the pod names none it allows"},
		{name: "no selection on a requirement Exists: the next pool", pools: []Pool{anyTeam(weighted(50)), newPool("plain")},
			pending: []*corev1.Pod{newPod("any", "1", "2Gi")}, pool: "plain", claims: map[string][]string{"": {"any"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pending, claims := tc.pending, tc.claims
			if pending == nil {
				pending = []*corev1.Pod{selects("p", tc.value)}
			}
			if claims == nil {
				claims = map[string][]string{tc.value: {"p"}}
			}
			in := Input{Pending: pending, Pools: tc.pools}
			plan := testPlanner(t).Plan(context.Background(), in)
			if tc.refused != "" {
				if len(plan.Claims) != 0 {
					t.Fatalf("want the pod unplaceable; got %s", summary(plan))
				}
				for _, p := range tc.pools {
					if reasonsOf(t, plan, pending[0])[p.NodePool.Name] == "" {
						t.Errorf("no reason given for NodePool %s", p.NodePool.Name)
					}
				}
				reasonContains(t, plan, pending[0], tc.refused)
				return
			}
			placedOnce(t, plan, pending)
			if len(plan.Claims) != len(claims) {
				t.Fatalf("want %d claims; got %s", len(claims), summary(plan))
			}
			for _, pc := range plan.Claims {
				if pc.NodePool.Name != tc.pool {
					t.Fatalf("claim from NodePool %s, want %s", pc.NodePool.Name, tc.pool)
				}
				claim := nodeclaim.New(pc)
				value, labelled := claim.Labels[team]
				want, ok := claims[value]
				var names []string
				for _, p := range pc.Pods {
					names = append(names, p.Name)
				}
				slices.Sort(names)
				if !ok || !slices.Equal(names, want) {
					t.Errorf("claim for %v labels %s=%q; want claims %v", names, team, value, claims)
				}
				// The node registers with the claim's labels; a requirement says the same to the cloud.
				if _, templated := pc.NodePool.Spec.Template.Labels[team]; labelled && !templated &&
					!slices.ContainsFunc(claim.Spec.Requirements, func(r karpv1.NodeSelectorRequirementWithMinValues) bool {
						return r.Key == team && r.Operator == corev1.NodeSelectorOpIn && slices.Equal(r.Values, []string{value})
					}) {
					t.Errorf("NodeClaim requirements %v lack %s In [%s]", claim.Spec.Requirements, team, value)
				}
				sameOptions(t, pc, pc.Pods, anyOffering)
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestConstraintDaemonSetsOnCustomLabels: a DaemonSet that selects a value of a custom key the
// NodePool leaves open is reserved for on the pool's claims (it runs on some of their nodes, and
// which is not known when a claim's daemons are); one that selects a value the pool does not
// allow is not.
func TestConstraintDaemonSetsOnCustomLabels(t *testing.T) {
	const team = "example.com/team"
	ds := func(name, value string) *appsv1.DaemonSet {
		spec := newPod("x", "1", "1Gi", nodeSelector(team, value)).Spec
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name)},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	}
	pod := newPod("app", "1", "2Gi", nodeSelector(team, "search"))
	in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("teams", requirement(team, corev1.NodeSelectorOpIn, "payments", "search"))},
		DaemonSets: DaemonSetPods([]*appsv1.DaemonSet{ds("search-agent", "search"), ds("ops-agent", "ops")})}
	plan := testPlanner(t).Plan(context.Background(), in)
	pc := onlyClaim(t, plan, pod)
	if len(pc.Daemons) != 1 || pc.Daemons[0].OwnerReferences[0].Name != "search-agent" {
		t.Fatalf("daemons on the claim: %d; want only the one that selects a value the pool allows", len(pc.Daemons))
	}
	sameOptions(t, pc, []*corev1.Pod{pod, pc.Daemons[0]}, anyOffering)
	verifyPlan(t, sim, in, plan)
}
