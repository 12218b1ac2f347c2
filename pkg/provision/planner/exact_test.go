package planner

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

// TestPlanIsExact checks plans against the whole Filter, with none of the planner's shortcuts
// (classes of offerings, the capacity frontier, settling, memoisation): every claim is launched
// as each of its options in turn, every other claim as its cheapest, and each pod must pass every
// Filter plugin on its node with all the other pods of the plan in place, as the scheduler would
// judge the last pod it binds there.
func TestPlanIsExact(t *testing.T) {
	catalogs := map[string][]*cloud.InstanceType{"fake": fake.Catalog(), "karpenter": karpenterCatalog()}
	for name, catalog := range catalogs {
		for _, mix := range []string{"mixed", "either"} {
			t.Run(name+"/"+mix, func(t *testing.T) {
				pool := newPool("default")
				pool.InstanceTypes = catalog
				pending := eitherPods(catalog)
				if mix == "mixed" {
					pending = append(pending, benchPods(60, benchClasses...)...)
					pending = append(pending, constrainedPods()...)
				}
				plan := testPlanner(t).Plan(context.Background(), Input{Pending: pending, Pools: []Pool{pool}})
				if len(plan.Unplaceable) != 0 {
					t.Fatalf("%d pods unplaceable: %s", len(plan.Unplaceable), summary(plan))
				}
				for i, pc := range plan.Claims {
					expressibleOnly(t, pc, catalog)
					// The cheapest, the dearest, and one between: every option is the same question.
					for _, o := range []int{0, len(pc.Options) / 2, len(pc.Options) - 1} {
						nodes, pods := materialise(plan, i, o)
						for _, p := range pc.Pods {
							if why := filterLast(t, nodes, pods, p); why != "" {
								t.Errorf("claim %d as %s/%s/%s: pod %s fails: %s", i, pc.Options[o].InstanceType.Name,
									pc.Options[o].Offering.Zone, pc.Options[o].Offering.CapacityType, p.Name, why)
							}
						}
					}
				}
			})
		}
	}
}

// constrainedPods are pods with one constraint each that a claim's offerings can disagree on.
func constrainedPods() []*corev1.Pod {
	var out []*corev1.Pod
	label := func(app string) podOpt {
		return func(p *corev1.Pod) { p.Labels = map[string]string{"app": app} }
	}
	own := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	for i := range 6 {
		out = append(out, newPod(fmt.Sprintf("zonal-%d", i), "500m", "1Gi", nodeSelector(corev1.LabelTopologyZone, fake.Zones()[i%3])))
	}
	for i := range 3 {
		out = append(out, newPod(fmt.Sprintf("zone-anti-%d", i), "250m", "256Mi", label("zone-anti"), func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: own("zone-anti"), TopologyKey: corev1.LabelTopologyZone}}}}
		}))
	}
	for i := range 4 {
		out = append(out, newPod(fmt.Sprintf("ct-spread-%d", i), "250m", "256Mi", label("ct-spread"), func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "karpenter.sh/capacity-type",
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: own("ct-spread")}}
		}))
	}
	for i := range 3 {
		out = append(out, newPod(fmt.Sprintf("port-%d", i), "100m", "128Mi", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}))
	}
	return out
}

// eitherPods may run on one type in the first zone or another in the second: a claim whose
// options list both types and both zones would allow the combinations the pods refuse.
func eitherPods(catalog []*cloud.InstanceType) []*corev1.Pod {
	var out []*corev1.Pod
	var pair []string
	for _, it := range catalog {
		if cpu := it.Capacity.Cpu(); cpu.Value() >= 16 && cpu.Value() <= 32 && len(pair) < 2 {
			pair = append(pair, it.Name)
		}
	}
	small, big := pair[0], pair[1]
	term := func(zone, typ string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{typ}}}}
	}
	for i := range 2 {
		out = append(out, newPod(fmt.Sprintf("either-%d", i), "100m", "128Mi", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{term(fake.Zones()[0], small), term(fake.Zones()[1], big)}}}}
		}))
	}
	return out
}

// expressibleOnly checks that the NodeClaim's requirements allow no offering of the catalog that
// the claim's options leave out: the cloud may launch any combination of the listed types, zones
// and capacity types.
func expressibleOnly(t *testing.T, pc *nodeclaim.Planned, catalog []*cloud.InstanceType) {
	t.Helper()
	claim := nodeclaim.New(pc)
	allowed := map[string]map[string]bool{}
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, "karpenter.sh/capacity-type"} {
		values, _ := requirementValues(claim, key)
		allowed[key] = map[string]bool{}
		for _, v := range values {
			allowed[key][v] = true
		}
	}
	options := map[string]bool{}
	for _, o := range pc.Options {
		options[optionKey(o.InstanceType, o.Offering)] = true
	}
	for _, it := range catalog {
		for _, o := range it.Offerings {
			if o.Available && allowed[corev1.LabelInstanceTypeStable][it.Name] && allowed[corev1.LabelTopologyZone][o.Zone] &&
				allowed["karpenter.sh/capacity-type"][o.CapacityType] && !options[optionKey(it, o)] {
				t.Errorf("claim for %s allows %s, which is not one of its options", pc.Pods[0].Name, optionKey(it, o))
			}
		}
	}
}

// materialise returns the nodes and bound pods of a plan: claim which launched as its option o,
// every other claim as its cheapest option.
func materialise(plan *Plan, which, o int) ([]*corev1.Node, []*corev1.Pod) {
	return materialiseWith(plan, which, o, claimLabelsOf(plan))
}

// claimLabelsOf are the labels of each claim of the plan's NodeClaim, in order: what materialise
// starts each node's labels from. A caller that materialises one plan many times works them out
// once (building the NodeClaim was most of what verifying a plan cost).
func claimLabelsOf(plan *Plan) []map[string]string {
	out := make([]map[string]string, len(plan.Claims))
	for i, pc := range plan.Claims {
		out[i] = nodeclaim.New(pc).Labels
	}
	return out
}

func materialiseWith(plan *Plan, which, o int, claimLabels []map[string]string) ([]*corev1.Node, []*corev1.Pod) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i, pc := range plan.Claims {
		opt := pc.Options[0]
		if i == which {
			opt = pc.Options[o]
		}
		name := fmt.Sprintf("claim-%d", i)
		labels := nodeLabels(claimLabels[i], opt)
		labels[corev1.LabelHostname] = name
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       corev1.NodeSpec{Taints: pc.NodePool.Spec.Template.Spec.Taints},
			Status:     corev1.NodeStatus{Capacity: opt.InstanceType.Capacity, Allocatable: opt.InstanceType.Allocatable()},
		})
		for _, p := range append(append([]*corev1.Pod{}, pc.Daemons...), pc.Pods...) {
			pods = append(pods, clusterview.OnNode(p, name))
		}
	}
	return nodes, pods
}

// filterLast runs PreFilter and Filter for p against the cluster without it, on the node it was
// planned for, and returns why it fails, or "".
func filterLast(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, p *corev1.Pod) string {
	t.Helper()
	return filterLastOn(t, sim, nodes, pods, p)
}
