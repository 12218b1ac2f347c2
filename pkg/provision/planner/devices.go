package planner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/simulation/dra"
)

// Pods that ask for devices through ResourceClaims are weighed by DynamicResources, whose Filter
// runs the structured allocator over the simulation's DRA manager (pkg/simulation/dra). The plan
// keeps that manager's overlay in step with itself:
//
//   - Before such a pod's PreFilter (where the plugin reads the slices), every node the pod may
//     be weighed on publishes its type's devices: the nodes in flight, the claims this plan
//     opened (the devices of each type they may still launch as, apart), and the claim the pod
//     would open in each pool (every type of the pool).
//   - Before the first pod, the claims of the pods earlier plans counted on nodes in flight are
//     allocated there (holdCounted).
//   - Once the pod is placed, the plugin's own Reserve records what its claims took, on the node
//     as each type it may still launch as, so the devices are not planned for another pod and a
//     claim shared with later pods is allocated once, on that node.
//
// Pods without claims never trigger any of this: the plugin skips them before reading a slice.

// needsDevices reports whether the pod asks for devices: through ResourceClaims, or through an
// extended resource that DRA devices back (nodepool.AsksBacked).
func (pl *Planner) needsDevices(pod *corev1.Pod) bool {
	return len(pod.Spec.ResourceClaims) > 0 || nodepool.AsksBacked(pod, pl.backed)
}

// devicePlan keeps the DRA overlay of one plan.
type devicePlan struct {
	m *dra.Manager
	// pools caches the devices of every type of a pool that has some, by type name.
	pools map[*nodepool.State]map[string][]cloud.DeviceSet
	// shown is what the overlay was last told of each open claim: the alive offerings then.
	shown map[*openClaim][]int
	// next are the names of the claims the next pod would open, as the overlay serves them.
	next map[string]bool
}

// claimName names the n-th claim a plan opens, in ps.
func claimName(ps *nodepool.State, n int) string {
	return fmt.Sprintf("%s-planned-%d", ps.NodePool.Name, n)
}

// newDevicePlan empties the overlay for a new plan and, when some pending pod asks for devices,
// tells it the devices of the nodes in flight; nil when none does.
func newDevicePlan(p *planning) *devicePlan {
	m := p.pl.sim.DRA()
	m.Reset()
	asks := false
	for _, pod := range p.in.Pending {
		asks = asks || p.pl.needsDevices(pod)
	}
	if !asks {
		return nil
	}
	m.ReleaseHeldOnlyBy(p.in.Pending)
	// A node in flight publishes the devices of its type as its own NodePool offers it (a pool
	// may declare devices of its own); of the type as any pool offers it when its pool is gone.
	types := map[[2]string]*cloud.InstanceType{}
	for _, pool := range p.in.Pools {
		for _, it := range pool.InstanceTypes {
			types[[2]string{pool.NodePool.Name, it.Name}] = it
			types[[2]string{"", it.Name}] = it
		}
	}
	for name := range p.in.InFlight {
		ni := p.node(name)
		if ni == nil {
			continue
		}
		labels := ni.Node().Labels
		it := types[[2]string{labels[karpv1.NodePoolLabelKey], labels[corev1.LabelInstanceTypeStable]}]
		if it == nil {
			it = types[[2]string{"", labels[corev1.LabelInstanceTypeStable]}]
		}
		if it != nil && len(it.Devices) > 0 {
			m.SetNode(name, it.Devices)
		}
	}
	return &devicePlan{m: m, pools: map[*nodepool.State]map[string][]cloud.DeviceSet{}, shown: map[*openClaim][]int{}, next: map[string]bool{}}
}

// sync tells the overlay the devices of the plan's open claims whose offerings changed since,
// and of the claim the next pod would open in each pool.
func (d *devicePlan) sync(p *planning) {
	for _, oc := range p.open {
		if shown, ok := d.shown[oc]; ok && sameOfferings(shown, oc.alive) {
			continue
		}
		d.shown[oc] = oc.alive
		d.m.SetTemplate(oc.name, oc.pool.DevicesOf(oc.alive))
		delete(d.next, oc.name)
	}
	next := map[string]bool{}
	for _, ps := range p.pools {
		name := claimName(ps, len(p.open))
		next[name] = true
		if !d.next[name] {
			d.m.SetTemplate(name, d.poolDevices(ps))
		}
	}
	for name := range d.next {
		if !next[name] {
			d.m.SetTemplate(name, nil)
		}
	}
	d.next = next
}

// sameOfferings: alive is only ever replaced, never changed in place, so the same slice is the
// same offerings.
func sameOfferings(a, b []int) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// poolDevices are ps's TypeDevices, worked out once per plan.
func (d *devicePlan) poolDevices(ps *nodepool.State) map[string][]cloud.DeviceSet {
	if out, ok := d.pools[ps]; ok {
		return out
	}
	out := ps.TypeDevices()
	d.pools[ps] = out
	return out
}

// beforePreFilter readies the overlay for the pod's PreFilter.
func (p *planning) beforePreFilter(pod *corev1.Pod) {
	if p.devices != nil && p.pl.needsDevices(pod) {
		p.devices.sync(p)
	}
}

// reserveOn records what the pod's claims take on a node that exists or is in flight.
func (p *planning) reserveOn(ctx context.Context, pod *corev1.Pod, ni fwk.NodeInfo) {
	if p.devices == nil || !p.pl.needsDevices(pod) {
		return
	}
	if err := p.pl.sim.ReserveClaims(ctx, pod, []fwk.NodeInfo{ni}); err != nil {
		klog.FromContext(ctx).Error(err, "Recording the devices of a planned pod", "pod", klog.KObj(pod), "node", ni.Node().Name)
	}
}

// reserveOnClaim records what the pod's claims take on the open claim, once as each type the
// claim may still launch as: whichever it launches as, its devices for the pod are taken.
func (p *planning) reserveOnClaim(ctx context.Context, pod *corev1.Pod, oc *openClaim) {
	if p.devices == nil || !p.pl.needsDevices(pod) {
		return
	}
	seen := map[int]bool{}
	var views []fwk.NodeInfo
	for _, i := range oc.alive {
		t := oc.pool.Compatible[i].Typ
		if seen[t] {
			continue
		}
		seen[t] = true
		views = append(views, oc.placementView(i, nil, &framework.NodeInfo{}))
	}
	if err := p.pl.sim.ReserveClaims(ctx, pod, views); err != nil {
		klog.FromContext(ctx).Error(err, "Recording the devices of a planned pod", "pod", klog.KObj(pod), "claim", oc.name)
	}
}

// holdCounted records what the claims of the pods counted on nodes in flight take there: an
// earlier plan sent those pods there, and the scheduler will allocate their claims on that node
// once it is up. Without it a pod sharing such a claim would be planned as if the claim were free
// (onto new capacity of its own, while the scheduler will send it after the claim), and a device
// the node will give those pods could be planned for another. Where the node's devices are known,
// the plugin's own Reserve takes them; where they are not (the claim's instance type is not
// settled), the claims are held on the node without a device.
func (p *planning) holdCounted(ctx context.Context) {
	if p.devices == nil {
		return
	}
	m := p.pl.sim.DRA()
	for _, ni := range p.launchingNodes {
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if len(pod.Spec.ResourceClaims) == 0 {
				continue
			}
			unallocated := m.Unallocated(pod)
			if len(unallocated) == 0 {
				continue // bound there already, or its claims are not created yet
			}
			if err := p.pl.sim.ReserveClaims(ctx, pod, []fwk.NodeInfo{ni}); err != nil {
				klog.FromContext(ctx).V(4).Info("Holding the claims of a pod on its node in flight without devices", "pod", klog.KObj(pod), "node", ni.Node().Name, "reason", err)
				m.HoldOn(unallocated, ni.Node().Name)
			}
		}
	}
}

// waits reports whether the scheduler would not try the pod yet (a PreEnqueue plugin holds it:
// its ResourceClaim is not created yet), and records it as waiting then. Only pods with claims
// are asked: for the others the plan is as it was.
func (p *planning) waits(ctx context.Context, pod *corev1.Pod) bool {
	if !p.pl.needsDevices(pod) {
		return false
	}
	status := p.pl.sim.PreEnqueue(ctx, pod)
	if status.IsSuccess() {
		return false
	}
	p.plan.Waiting = append(p.plan.Waiting, Unplaceable{Pod: pod, Reasons: map[string]string{"": status.Message()}})
	return true
}
