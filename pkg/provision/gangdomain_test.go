package provision

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/client-go/tools/events"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// TestGangSharesOneZone: a gang whose PodGroup asks for one zone is planned in one zone, with the
// real Filter plugins. A ready node in zone a has room for half of it, and zone a has no capacity
// to launch: pod by pod, half would go to that node and half to a new node in another zone, which
// the scheduler's topology placement never binds. Planned as one, all of it goes to new nodes of
// one zone. A gang with a pod already bound in zone c has the rest planned there.
func TestGangSharesOneZone(t *testing.T) {
	ctx := context.Background()
	ring := gang("ring", 4)
	ring.Spec.SchedulingConstraints = &schedulingv1alpha2.PodGroupSchedulingConstraints{
		Topology: []schedulingv1alpha2.TopologyConstraint{{Key: corev1.LabelTopologyZone}}}
	p := &Provisioner{opts: Options{Recorder: events.NewFakeRecorder(100), PodGroups: podGroupLister(t, ring)}}
	pool := newPool("default")
	pool.InstanceTypes = withoutZone(pool.InstanceTypes, fake.ZoneA)
	node := readyNode("n-a", "2", "8Gi")
	node.Labels[corev1.LabelTopologyZone] = fake.ZoneA
	in := planner.Input{Pending: gangPods("ring", 4), Nodes: []*corev1.Node{node}, Pools: []planner.Pool{pool}}

	loose := testPlanner(t).Plan(ctx, in)
	if len(loose.FitsExisting) == 0 {
		t.Fatalf("planned pod by pod, no pod of the gang went to the node in zone a; the test shows nothing")
	}
	plan := p.wholeGangs(ctx, testPlanner(t), in)
	if len(plan.FitsExisting) != 0 || len(plan.Unplaceable) != 0 {
		t.Fatalf("%d pods on the node in zone a, %d unplaceable; want the whole gang on new nodes of one zone", len(plan.FitsExisting), len(plan.Unplaceable))
	}
	zones := claimZones(plan)
	if len(zones) != 1 || plannedCount(plan) != 4 {
		t.Errorf("%d pods planned, on claims in zones %v; want 4 in one zone", plannedCount(plan), zones)
	}

	// One pod of the gang runs in zone c: the other three follow it there.
	nodeC := readyNode("n-c", "1", "4Gi")
	nodeC.Labels[corev1.LabelTopologyZone] = fake.ZoneC
	bound := gangPods("ring", 4)
	bound[0].Spec.NodeName = nodeC.Name
	in = planner.Input{Pending: bound[1:], Nodes: []*corev1.Node{node, nodeC}, Pods: bound[:1], Pools: []planner.Pool{pool}}
	plan = p.wholeGangs(ctx, testPlanner(t), in)
	if zones := claimZones(plan); len(zones) != 1 || !zones[fake.ZoneC] || plannedCount(plan) != 3 {
		t.Errorf("with a pod of the gang in zone c: %d pods planned, on claims in zones %v; want 3 in %s", plannedCount(plan), zones, fake.ZoneC)
	}
}

// claimZones are the zones the plan's claims may launch in.
func claimZones(plan *planner.Plan) map[string]bool {
	out := map[string]bool{}
	for _, c := range plan.Claims {
		for _, o := range c.Options {
			out[o.Offering.Zone] = true
		}
	}
	return out
}

// withoutZone are copies of the instance types whose offerings in zone have no capacity.
func withoutZone(types []*cloud.InstanceType, zone string) []*cloud.InstanceType {
	out := make([]*cloud.InstanceType, len(types))
	for i, it := range types {
		c := *it
		c.Offerings = append([]cloud.Offering(nil), it.Offerings...)
		for j := range c.Offerings {
			if c.Offerings[j].Zone == zone {
				c.Offerings[j].Available = false
			}
		}
		out[i] = &c
	}
	return out
}
