package planner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/provision/planner/preferences"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// placing is one pending pod on its way through the steps of a plan.
type placing struct {
	pod         *corev1.Pod
	spec, group string
	info        *framework.PodInfo
	// state and pre are PreFilter's answer for the pod as it is, against the nodes and the claims
	// this plan opened, without the empty domains; state is nil when the pod spreads and no node
	// exists, as then only the domains can answer for it.
	state fwk.CycleState
	pre   *fwk.PreFilterResult
	// withDomains: the pod spreads, and its views of new capacity weigh the empty domains.
	withDomains bool
	// laddered: the pod weighs the nodes in flight in its views of new capacity, beside the claims
	// this plan opens, rather than first fit among the nodes that exist.
	laddered bool
	// passOver are the nodes in flight whose claim has not settled a topology key the pod reads.
	passOver map[string]bool
}

// asIs is the fit question for the pod as the scheduler sees it.
func (pp *placing) asIs() fitCheck { return fitCheck{pp.state, pp.pre, pp.pod, pp.group} }

// place runs the steps for one pod, in order, until one of them places it: PreFilter, the nodes
// that exist (the one it is destined for first), then new capacity. A pod none of them holds is
// unplaceable, with the reasons of the last view of it that was tried.
func (p *planning) place(ctx context.Context, pod *corev1.Pod) {
	if p.waits(ctx, pod) {
		return
	}
	pp, why := p.preFilter(ctx, pod)
	if pp == nil {
		p.unplaceable(pod, map[string]string{"": why})
		return
	}
	if ni := p.existingNode(ctx, pp); ni != nil {
		p.placeOn(ctx, pp, ni)
		return
	}
	if placed, reasons := p.newCapacity(ctx, pp); !placed {
		p.unplaceable(pod, reasons)
	}
}

// preFilter runs PreFilter for the pod against the nodes and the claims this plan opened so far
// (p.planned), or returns why the pod cannot be placed at all.
func (p *planning) preFilter(ctx context.Context, pod *corev1.Pod) (*placing, string) {
	spec := p.specs[pod]
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		return nil, err.Error()
	}
	pp := &placing{pod: pod, spec: spec, group: podkeys.GroupOf(pod, spec, p.defaultKeys), info: info}
	p.beforePreFilter(pod)
	// PreFilter must see the pods placed on claims opened by this plan, or inter-pod
	// (anti-)affinity and topology spread judge each pod as if it were alone: pods that must not
	// share a node would be packed onto one claim, and pods that must join another would be
	// Unplaceable.
	// A pod that spreads is weighed for new capacity against the empty domains too; the view
	// without them is for the nodes that exist, when there are any.
	pp.withDomains = podkeys.Spreads(pod, p.defaultKeys) && len(p.domains) > 0
	if len(p.nodeInfos) > 0 || !pp.withDomains {
		p.pl.sim.Use(p.snapshot, p.planned...)
		var status *fwk.Status
		if pp.state, pp.pre, status = p.pf.Run(ctx, pod, spec, -1, false); status != nil {
			return nil, status.Message()
		}
	}
	// A pod that prefers where it runs beside other pods, or one that spreads, weighs the claims
	// in flight in each of its views of new capacity (its preference ladder, the empty domains),
	// as it weighs the claims this plan opens: both are capacity on its way, which a pod planned
	// there waits for (HeldFor). Were they first fit, a replica that prefers another zone than its
	// sibling's would take room on the sibling's claim whenever the two were planned in two
	// batches, and so would the second replica of a zone spread, which sees no other zone while no
	// node runs there. A ready node takes the pod as it is: the scheduler binds it there whatever
	// it prefers. A node-affinity preference alone does not count: a claim in flight that may
	// launch as spot or on-demand carries neither label yet, so every shape that prefers spot would
	// refuse it and open a claim of its own.
	pp.laddered = len(p.launchingNodes) > 0 && (pp.withDomains || preferences.HasTopology(pod))
	if len(p.in.Unsettled) > 0 {
		pp.passOver = p.unsettled.PassOver(p.rel.Keys(pod).Topology)
	}
	return pp, ""
}

// existingNode is the first node, of those the pod takes as it is, that passes Filter for it: the
// node it is on its way to first, then first fit in name order.
func (p *planning) existingNode(ctx context.Context, pp *placing) fwk.NodeInfo {
	nowNodes := p.nodeInfos
	// The snapshot indexes its own list by room; p.ready is that list when nothing is in flight.
	seek := p.snapshot.NextWithRoom
	if pp.laddered {
		nowNodes = p.ready
		if len(p.launchingNodes) > 0 {
			seek = nil
		}
	}
	if destined := p.node(p.in.Destined[pp.pod.UID]); destined != nil {
		if ni := p.pl.firstFit(ctx, pp.asIs(), []fwk.NodeInfo{destined}, nil, p.memo, pp.passOver); ni != nil {
			return ni
		}
	}
	return p.pl.firstFit(ctx, pp.asIs(), nowNodes, seek, p.memo, pp.passOver)
}

// placeOn counts the pod on a node that exists or is in flight, whichever: the room it takes is
// gone for the pods after it, so no two pods are planned into the last free slot of one node.
func (p *planning) placeOn(ctx context.Context, pp *placing, ni fwk.NodeInfo) {
	p.reserveOn(ctx, pp.pod, ni)
	p.snapshot.AddPodInfo(ni, pp.info)
	p.pf.Add(pp.info, ni)
	if claim, ok := p.in.InFlight[ni.Node().Name]; ok {
		p.plan.InFlight[claim] = append(p.plan.InFlight[claim], pp.pod)
		if p.in.Spared[pp.pod.UID] {
			p.launching = append(p.launching, onItsNode{pod: pp.pod, node: ni})
		}
	} else {
		p.plan.FitsExisting = append(p.plan.FitsExisting, pp.pod)
		p.plan.FitsExistingOn[pp.pod.UID] = ni.Node().Name
	}
}

// unplaceable records that no step placed the pod, and why.
func (p *planning) unplaceable(pod *corev1.Pod, reasons map[string]string) {
	p.plan.Unplaceable = append(p.plan.Unplaceable, Unplaceable{Pod: pod, Reasons: reasons})
}

// capacity is what a pod's search for new capacity reads in each of its views.
type capacity struct {
	asks    simulation.Requests
	passes  []fillPass
	shy     bool
	kind    kindID
	guards  podGuards
	shunned map[*nodepool.State]bool
	views   []capacityView
	// waits: a view was left out because a claim in flight has not settled a key the pod spreads
	// over; the pod waits for it rather than being unplaceable.
	waits bool
}

// newCapacity tries the pod's views of new capacity in turn (preferences.go, domains.go),
// strictest first and last as the scheduler sees the pod. It returns whether one placed the pod,
// and else why the last view tried could not.
func (p *planning) newCapacity(ctx context.Context, pp *placing) (bool, map[string]string) {
	c := p.capacityFor(pp)
	var reasons map[string]string
	for i, w := range c.views {
		var placed bool
		// Only the last view's reasons are kept: the stricter shapes before it are not explained.
		if placed, reasons = p.inView(ctx, pp, c, w, i == len(c.views)-1); placed {
			return true, nil
		}
	}
	if len(p.pools) == 0 {
		reasons = map[string]string{"": "no NodePool is ready to launch capacity"}
	} else if c.waits {
		reasons = waitingForOpenClaims(reasons)
	}
	return false, reasons
}

// capacityFor prepares the pod's search for new capacity: its requests, the passes over the open
// claims (fill.go), the pools it shuns and its views.
func (p *planning) capacityFor(pp *placing) *capacity {
	r := p.pl.requestsOf(pp.pod)
	c := &capacity{asks: simulation.Requests{MilliCPU: r.Cpu().MilliValue(), Memory: r.Memory().Value()},
		guards: podGuards{pod: pp.pod, spec: pp.spec, without: pp.state}}
	c.passes, c.shy = passesFor(pp.pod, p.defaultKeys)
	if c.shy {
		c.kind = p.kinds.of(pp.pod)
	}
	c.shunned = shunnedPools(pp.pod, p.pools)
	c.views = shunningViews(pp.pod, newCapacityViews(pp.pod, p.defaultKeys, len(p.domains) > 0), c.shunned)
	// passOver, for every topology key the pod reads, is the cheap test; the spread keys alone
	// decide.
	if len(pp.passOver) > 0 && len(p.unsettled.PassOver(podkeys.SpreadKeysOfPods([]*corev1.Pod{pp.pod}, p.defaultKeys))) > 0 {
		c.views, c.waits = withoutTheSchedulersView(c.views)
	}
	return c
}

// shaped is one view of a pod (as itself, or a stricter shape of it) with PreFilter's answer for
// it, and the guard that holds the shape to what the scheduler takes of the pod.
type shaped struct {
	as    *corev1.Pod
	group string
	state fwk.CycleState
	pre   *fwk.PreFilterResult
	guard *asScheduled
	keys  podkeys.Keys
	// domains: the view weighs the empty domains.
	domains bool
}

// withDomains is planned and then the empty domains, in a slice of its own: appended to
// planned, the domains would sit where the next claim to open is written.
func (p *planning) withDomains() []fwk.NodeInfo {
	if len(p.plannedDomains) != len(p.planned)+len(p.domains) {
		p.plannedDomains = append(append(make([]fwk.NodeInfo, 0, len(p.planned)+len(p.domains)), p.planned...), p.domains...)
	}
	return p.plannedDomains
}

// inView tries one view of the pod: the nodes in flight (for a laddered pod), the claims this
// plan opened, and new claims from the pools, in that order.
func (p *planning) inView(ctx context.Context, pp *placing, c *capacity, w capacityView, last bool) (bool, map[string]string) {
	s := shaped{as: w.as, group: pp.group, state: pp.state, pre: pp.pre, domains: w.domains}
	if s.as != pp.pod {
		// A shape is a function of the pod's spec: the spec and the step name it.
		s.group = podkeys.GroupOf(s.as, fmt.Sprintf("%s/%d", pp.spec, w.step), p.defaultKeys)
	}
	views := p.planned
	if w.domains {
		views = p.withDomains()
	}
	p.pl.sim.Use(p.snapshot, views...)
	// The pod's state is against the nodes and claims, without the domains; there is none when
	// it spreads and no node exists.
	if s.as != pp.pod || w.domains || s.state == nil {
		var status *fwk.Status
		if s.state, s.pre, status = p.pf.Run(ctx, s.as, pp.spec, w.step, w.domains); status != nil {
			return false, map[string]string{"": status.Message()}
		}
	}
	if s.as != pp.pod {
		var status *fwk.Status
		if s.guard, status = c.guards.of(ctx, p.pf, w.domains); status != nil {
			return false, map[string]string{"": status.Message()}
		}
	}
	s.keys = p.rel.Keys(s.as)
	if pp.laddered && p.launchingNode(ctx, pp, s) {
		return true, nil
	}
	if p.openClaim(ctx, pp, c, s) {
		return true, nil
	}
	return p.newClaim(ctx, pp, c, s, last)
}

// launchingNode places the pod on the first node in flight that takes the shape. The pod is held
// to the claim it is planned onto, so the scheduler must take it there as it is, whatever the
// shape says; and, as on the claims this plan opens, the pod must pass beside a shape that is not
// strictly stricter (preferences.go), with the empty domains when the shape has them.
func (p *planning) launchingNode(ctx context.Context, pp *placing, s shaped) bool {
	asIs := pp.asIs()
	shape, also := fitCheck{s.state, s.pre, s.as, s.group}, make([]fitCheck, 0, 2)
	if s.as != pp.pod || s.domains {
		also = append(also, asIs)
	}
	if s.guard != nil && s.guard.state != asIs.state {
		also = append(also, fitCheck{s.guard.state, nil, pp.pod, ""})
	}
	// A shape reads every topology key the pod reads, and the keys of the terms its preferences
	// became.
	ni := p.pl.firstFit(ctx, shape, p.launchingNodes, nil, p.memo, p.unsettled.PassOver(s.keys.Topology), also...)
	if ni == nil {
		return false
	}
	p.placeOn(ctx, pp, ni)
	return true
}

// openClaim books the pod onto a claim this plan opened: the claims with room for it first, then
// the others; for a pod that repels its own kind, the claims without it first (fill.go).
func (p *planning) openClaim(ctx context.Context, pp *placing, c *capacity, s shaped) bool {
	var by byDomain
	if !p.fresh {
		by = byDomainOf(s.as, s.keys)
	}
	for _, pass := range c.passes {
		rejecting := p.memo.ClaimsRejecting(s.group)
		for i := range p.rooms.order(p.open, pass, c.asks, c.kind, c.shy, rejecting, by) {
			oc := p.open[i]
			if simulation.AllowedByPreFilter(s.pre, oc.name) && (s.as == pp.pod || !c.shunned[oc.pool]) {
				alive, choice := p.pl.weigh(ctx, oc, s.as, s.state, s.guard, s.keys)
				if alive != nil {
					p.addTo(ctx, pp, c, i, alive, choice, s.state)
					return true
				}
				p.rooms.refused(oc)
			}
			p.memo.RejectClaim(s.group, oc)
		}
	}
	return false
}

// addTo books the pod onto the open claim at index i, which weighing found alive for it.
func (p *planning) addTo(ctx context.Context, pp *placing, c *capacity, i int, alive []int, choice nodepool.LabelChoice, state fwk.CycleState) {
	oc := p.open[i]
	before, n := oc.info.Node(), len(oc.info.GetPods())
	if p.pl.add(ctx, oc, pp.pod, pp.info, state, alive, choice) {
		p.pf.Relabelled(oc.info, before, n)
	}
	p.reserveOnClaim(ctx, pp.pod, oc)
	p.rooms.changed(i)
	p.pf.Add(pp.info, oc.info)
	if c.shy {
		p.rooms.holds(oc, i, c.kind)
	}
}

// newClaim opens a claim for the pod from the first pool, in order, that can hold the shape, and
// returns why each pool could not when none can: in the plugins' words for the pod's last view
// (last), whose reasons are the pod's, and notExplained for the views before it.
func (p *planning) newClaim(ctx context.Context, pp *placing, c *capacity, s shaped, last bool) (bool, map[string]string) {
	reasons := map[string]string{}
	// The pools whose offerings all refused the pod are asked why only if no pool takes it, and
	// only when the caller reads the reasons: a pod that the last of twenty NodePools takes was
	// weighed offering by offering in the nineteen before, most of a plan over EC2's catalog.
	var unexplained []*nodepool.State
	explain := last && !p.in.Unexplained[pp.pod.UID]
	for _, ps := range p.pools {
		if why, ok := p.memo.PoolRejected(s.group, ps); ok {
			reasons[ps.NodePool.Name] = why
			if why == notExplained && explain {
				unexplained = append(unexplained, ps)
			}
			continue
		}
		if s.as != pp.pod && c.shunned[ps] {
			reasons[ps.NodePool.Name] = shunnedReason(ps)
			continue
		}
		name := claimName(ps, len(p.open))
		oc, why := p.pl.open(ctx, s.state, s.pre, s.as, s.guard, pp.info, s.keys, name, ps)
		if oc == nil {
			reasons[ps.NodePool.Name] = why
			p.memo.RejectPool(s.group, ps, why)
			if why == notExplained && explain {
				unexplained = append(unexplained, ps)
			}
			continue
		}
		oc.book(pp.pod)
		p.reserveOnClaim(ctx, pp.pod, oc)
		if c.shy {
			p.rooms.holds(oc, len(p.open), c.kind)
		}
		p.pf.Opened(oc.info)
		p.open = append(p.open, oc)
		p.planned = append(p.planned, oc.info)
		p.rooms.opened()
		ps.OpenCapacity = append(ps.OpenCapacity, &oc.capacity)
		return true, nil
	}
	for _, ps := range unexplained {
		why := p.pl.whyNot(ctx, s.state, s.as, s.keys, claimName(ps, len(p.open)), ps)
		reasons[ps.NodePool.Name] = why
		p.memo.RejectPool(s.group, ps, why)
	}
	return false, reasons
}
