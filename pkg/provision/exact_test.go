package provision

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// TestPlanIsExact checks plans against the whole Filter, with none of the planner's shortcuts
// (classes of offerings, the capacity frontier, settling, memoisation): every claim is launched
// as each of its options in turn, every other claim as its cheapest, and each pod must pass every
// Filter plugin on its node with all the other pods of the plan in place, as the scheduler would
// judge the last pod it binds there.
func TestPlanIsExact(t *testing.T) {
	catalogs := map[string][]*cloud.InstanceType{"fake": fake.Catalog(), "karpenter": karpenterCatalog()}
	for name, catalog := range catalogs {
		t.Run(name, func(t *testing.T) {
			pool := newPool("default")
			pool.InstanceTypes = catalog
			pending := benchPods(60, benchClasses...)
			for i := range 6 {
				pending = append(pending, newPod(fmt.Sprintf("zonal-%d", i), "500m", "1Gi", nodeSelector(corev1.LabelTopologyZone, fake.Zones()[i%3])))
			}
			plan := testPlanner(t).Plan(context.Background(), Input{Pending: pending, Pools: []Pool{pool}})
			if len(plan.Unplaceable) != 0 {
				t.Fatalf("%d pods unplaceable: %s", len(plan.Unplaceable), summary(plan))
			}
			for i, pc := range plan.Claims {
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

// materialise returns the nodes and bound pods of a plan: claim which launched as its option o,
// every other claim as its cheapest option.
func materialise(plan *Plan, which, o int) ([]*corev1.Node, []*corev1.Pod) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i, pc := range plan.Claims {
		opt := pc.Options[0]
		if i == which {
			opt = pc.Options[o]
		}
		name := fmt.Sprintf("claim-%d", i)
		labels := candidateLabels(pc.NodePool, opt.InstanceType, opt.Offering, scheduling.NodeSelectorRequirements(pc.NodePool.Spec.Template.Spec.Requirements))
		labels[corev1.LabelHostname] = name
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       corev1.NodeSpec{Taints: pc.NodePool.Spec.Template.Spec.Taints},
			Status:     corev1.NodeStatus{Capacity: opt.InstanceType.Capacity, Allocatable: opt.InstanceType.Allocatable()},
		})
		for _, p := range append(append([]*corev1.Pod{}, pc.Daemons...), pc.Pods...) {
			pods = append(pods, onNode(p, name))
		}
	}
	return nodes, pods
}

// filterLast runs PreFilter and Filter for p against the cluster without it, on the node it was
// planned for, and returns why it fails, or "".
func filterLast(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, p *corev1.Pod) string {
	t.Helper()
	var others []*corev1.Pod
	node := ""
	for _, q := range pods {
		if q.UID == p.UID {
			node = q.Spec.NodeName
			continue
		}
		others = append(others, q)
	}
	snapshot := schedcache.NewSnapshot(others, nodes)
	sim.Use(snapshot)
	state, _, status := sim.PreFilter(context.Background(), p)
	if status != nil {
		return "PreFilter: " + status.Message()
	}
	ni, err := snapshot.NodeInfos().Get(node)
	if err != nil {
		t.Fatal(err)
	}
	if s := sim.Filter(context.Background(), state, p, ni.(*framework.NodeInfo)); !s.IsSuccess() {
		return s.Message()
	}
	return ""
}
