package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Input is everything one plan looks at.
type Input struct {
	// Pending are the pods to place.
	Pending []*corev1.Pod
	// Nodes and Pods are the cluster as the scheduler sees it: every node, including the
	// in-flight ones below, and every pod bound or planned onto them.
	Nodes []*corev1.Node
	Pods  []*corev1.Pod
	// InFlight maps the name of a node in Nodes to the NodeClaim it stands for, for nodes that
	// are launching or not yet initialized. Pods that fit there need no new capacity; a pod
	// with preferences, or one that spreads, weighs them as it weighs the claims a plan opens.
	InFlight map[string]string
	// Unsettled maps nodes of InFlight to the label keys their claim has not settled yet
	// (View.Unsettled): a pod that reads one of them as a topology key is not placed there, as
	// it would be counted in no domain of the key until the claim launches.
	Unsettled map[string][]string
	// Spared are the pods, pending or counted in Pods on a node they are not bound to, held to a
	// node in flight that an earlier plan launched for them (HeldFor, which LaunchHold bounds).
	// The claims a plan opens must not make the scheduler refuse them there
	// (sparingTheLaunching).
	Spared map[types.UID]bool
	// Pools are the NodePools to launch from, highest weight first.
	Pools []Pool
	// DaemonSets are the pods DaemonSets would run on a new node (see DaemonSetPods); each new
	// node's room is what its daemons leave.
	DaemonSets []*corev1.Pod
	// Destined maps pending pods to the node in Nodes they are on their way to (nominated there,
	// or planned onto its NodeClaim by an earlier plan). They are placed first, and there first when they
	// still fit: a plan that packed them anew would send the scheduler other ways than the
	// nominations it already follows, and the pods caught between would need new capacity.
	Destined map[types.UID]string
	// First are pods of Pending placed before the others (after the destined ones), whatever
	// their size: a removal's probe lets the pods that wait unplaced take their pick of the room
	// it frees before the pods it evicts, as the scheduler may give it to them.
	First map[types.UID]bool
	// Snapshot, when set, is Nodes and Pods already built (simulation.NewSnapshot), for a caller
	// that plans many times over one cluster and changes it only in forks: the plan then reads
	// its nodes and pods from it, and Pods only for the topology terms they declare. The plan
	// leaves it as it found it.
	Snapshot *simulation.Snapshot
}

// Plan is what the planner decided.
type Plan struct {
	// Claims are the NodeClaims to create.
	Claims []*PlannedClaim
	// InFlight maps NodeClaim names to the pending pods that will go to them.
	InFlight map[string][]*corev1.Pod
	// FitsExisting are pods that fit a node that is ready now; the scheduler will place them.
	// FitsExistingOn says which node the plan counted each of them on.
	FitsExisting   []*corev1.Pod
	FitsExistingOn map[types.UID]string
	// Unplaceable are pods no NodePool can hold, with the reason per NodePool.
	Unplaceable []Unplaceable
}

// PlannedClaim is a NodeClaim to launch: a NodePool, the pods it is for, and the offerings it
// may be launched as, cheapest first. Every option passes every Filter plugin for every pod.
type PlannedClaim struct {
	NodePool *karpv1.NodePool
	Pods     []*corev1.Pod
	Options  []Option
	// Daemons are the DaemonSet pods that will run on the node beside Pods (on its cheapest
	// option); their requests are part of what the node must hold.
	Daemons []*corev1.Pod
	// MinValuesShort says which requirements' minValues the options fall short of, or "".
	MinValuesShort string
	// Labels are the values the plan chose for custom label keys that the NodePool's requirements
	// leave open (several values, or any): the NodeClaim carries each as a label and as a
	// single-value requirement, so the node registers with the value its pods were placed for.
	Labels map[string]string
}

// Option is one offering a planned claim can launch as.
type Option struct {
	InstanceType *cloud.InstanceType
	Offering     cloud.Offering
}

// Unplaceable is a pod that fits nowhere, with a reason per NodePool (or one overall reason when
// no NodePool was consulted).
type Unplaceable struct {
	Pod     *corev1.Pod
	Reasons map[string]string
}

// Planner turns pending pods into NodeClaims. Fit is decided by the simulator's Filter plugins.
type Planner struct {
	sim *simulation.Simulator
	// daemons are the current plan's DaemonSet pods; a Planner runs one plan at a time.
	daemons *daemons
	// requests are the current plan's pending pods' requests, computed once.
	requests map[*corev1.Pod]corev1.ResourceList
	// minValues is the policy for requirements with minValues (see minvalues.go).
	minValues MinValuesPolicy
	// scratch are the nodes the planner writes a view of a claim into before each Filter
	// question, one per kind of question, so that the questions allocate no node. Filter plugins
	// do not keep the nodes they are shown.
	scratch struct{ capacity, placement, cover framework.NodeInfo }
	// fresh asks every question afresh: PreFilter for every pod instead of keeping states (see
	// preFilters and beside), and Filter on every claim, where a domain that refused a pod would
	// answer for its other claims (see byDomain). Tests compare the two, and read reused, how
	// many states the last plan brought up to date.
	fresh  bool
	reused int
}

// requestsOf returns the pod's requests, from the current plan's cache when it is pending.
func (pl *Planner) requestsOf(pod *corev1.Pod) corev1.ResourceList {
	if r, ok := pl.requests[pod]; ok {
		return r
	}
	return scheduling.PodRequests(pod)
}

// ResourcesFiltered reports whether the planner's Filter runs NodeResourcesFit, so that a pod
// asking for more than a node has left is never placed there.
func (pl *Planner) ResourcesFiltered() bool { return pl.sim.ResourcesFiltered() }

// NewPlanner returns a planner over sim.
func NewPlanner(sim *simulation.Simulator) *Planner { return &Planner{sim: sim} }

// option is one offering with a template node holding the pod's would-be neighbours; only the
// explanation of an unplaceable pod still weighs every offering on its own.
type option struct {
	c    *candidate
	info *framework.NodeInfo
}

// Plan places in.Pending: first on nodes that exist or are in flight, then on claims opened by
// this plan, then on new claims from the pools in order. A pod with preferences, or one that
// spreads, goes to ready nodes first, and then weighs nodes in flight beside the claims of the
// plan, strictest shape of itself first.
func (pl *Planner) Plan(ctx context.Context, in Input) *Plan {
	snapshot := in.Snapshot
	if snapshot == nil {
		var err error
		if snapshot, err = simulation.NewSnapshot(in.Pods, in.Nodes); err != nil {
			plan := &Plan{InFlight: map[string][]*corev1.Pod{}, FitsExistingOn: map[types.UID]string{}}
			for _, pod := range in.Pending {
				plan.Unplaceable = append(plan.Unplaceable, Unplaceable{Pod: pod, Reasons: map[string]string{"": err.Error()}})
			}
			return plan
		}
	}
	// The plan counts its pods on the snapshot's nodes as it goes; the fork leaves the caller's
	// snapshot as it was.
	snapshot.Fork()
	defer snapshot.Revert()
	// The snapshot lists nodes by name: first fit goes in that order, so that a plan is the same
	// for the same input.
	nodeInfos, _ := snapshot.NodeInfos().List()
	byName := make(map[string]fwk.NodeInfo, len(nodeInfos))
	var ready, launchingNodes []fwk.NodeInfo
	unsettled := newOpenKeys(in.Unsettled)
	for _, ni := range nodeInfos {
		byName[ni.Node().Name] = ni
		if _, ok := in.InFlight[ni.Node().Name]; ok {
			launchingNodes = append(launchingNodes, ni)
		} else {
			ready = append(ready, ni)
		}
	}

	var cpu, mem, maxCPU, maxMem float64
	pl.requests = make(map[*corev1.Pod]corev1.ResourceList, len(in.Pending))
	for _, p := range in.Pending {
		r := scheduling.PodRequests(p)
		pl.requests[p] = r
		c, m := float64(r.Cpu().MilliValue()), r.Memory().AsApproximateFloat64()
		cpu, mem, maxCPU, maxMem = cpu+c, mem+m, max(maxCPU, c), max(maxMem, m)
	}
	pools := make([]*poolState, 0, len(in.Pools))
	for _, p := range in.Pools {
		ps := newPoolState(p)
		ps.rank = len(pools)
		ps.rateEfficiency(cpu, mem, maxCPU, maxMem)
		pools = append(pools, ps)
	}
	plan := &Plan{InFlight: map[string][]*corev1.Pod{}, FitsExistingOn: map[types.UID]string{}}
	pl.sim.Use(snapshot)
	pl.daemons = pl.prepareDaemons(ctx, in.DaemonSets)
	pl.reserveDaemonsInFlight(ctx, snapshot, nodeInfos, in.InFlight)
	selectorKeys, defaultKeys := pl.sim.ProfileNodeKeys()
	rel := newRelevance(selectorKeys, defaultKeys, in.Pending, in.Pods, in.DaemonSets)
	domains := emptyDomains(pools, readBySpreaders(in.Pending, rel, defaultKeys))
	var open []*openClaim
	var rooms claimRooms
	kinds := kindIDs{}
	planned := make([]fwk.NodeInfo, 0, len(in.Pending)+len(domains))
	memo := newRejections()
	ratio := 0.0
	if len(pools) > 0 {
		ratio = pools[0].ratio
	}
	specs := make(map[*corev1.Pod]string, len(in.Pending))
	for _, pod := range in.Pending {
		specs[pod] = specKey(pod)
	}
	pf := newPreFilters(pl.sim, pl.fresh, slices.Collect(maps.Values(specs)))
	// The pods this plan leaves to capacity in flight: the claims it opens must not break them.
	var launching []onItsNode
	for _, pod := range destinedFirst(firstOf(sortedForPacking(in.Pending, ratio), in.First), in.Destined) {
		spec := specs[pod]
		group := groupOf(pod, spec, defaultKeys)
		info, err := framework.NewPodInfo(pod)
		if err != nil {
			plan.Unplaceable = append(plan.Unplaceable, Unplaceable{Pod: pod, Reasons: map[string]string{"": err.Error()}})
			continue
		}
		// PreFilter must see the pods placed on claims opened by this plan, or inter-pod
		// (anti-)affinity and topology spread judge each pod as if it were alone: pods that
		// must not share a node were packed onto one claim, and pods that must join another
		// were Unplaceable.
		planned = planned[:0]
		for _, oc := range open {
			planned = append(planned, oc.info)
		}
		// A pod that spreads is weighed for new capacity against the empty domains too (below);
		// the view without them is for the nodes that exist, when there are any.
		withDomains := spreads(pod, defaultKeys) && len(domains) > 0
		var state fwk.CycleState
		var pre *fwk.PreFilterResult
		if len(nodeInfos) > 0 || !withDomains {
			pl.sim.Use(snapshot, planned...)
			var status *fwk.Status
			if state, pre, status = pf.run(ctx, pod, spec, -1, false); status != nil {
				plan.Unplaceable = append(plan.Unplaceable, Unplaceable{Pod: pod, Reasons: map[string]string{"": status.Message()}})
				continue
			}
		}
		// Count the pod on the node whether it is ready or in flight: the room it takes is gone
		// for the pods after it. (Only in-flight nodes used to be charged, so any number of pods
		// could "fit" the last free slot of a ready node and no capacity was planned for all but
		// one of them.)
		placeOn := func(ni fwk.NodeInfo) {
			snapshot.AddPod(ni, pod)
			pf.add(info, ni)
			if claim, ok := in.InFlight[ni.Node().Name]; ok {
				plan.InFlight[claim] = append(plan.InFlight[claim], pod)
				if in.Spared[pod.UID] {
					launching = append(launching, onItsNode{pod: pod, node: ni})
				}
			} else {
				plan.FitsExisting = append(plan.FitsExisting, pod)
				plan.FitsExistingOn[pod.UID] = ni.Node().Name
			}
		}
		// A pod that prefers where it runs beside other pods, or one that spreads, weighs the
		// claims in flight in each of its views of new capacity below (its preference ladder, the
		// empty domains), as it weighs the claims this plan opens: both are capacity on its way,
		// which a pod planned there waits for (HeldFor). Weighed here as it is, a replica that
		// prefers another zone than its sibling's took room on the sibling's claim whenever the
		// two were planned in two batches, a few milliseconds apart, and ran beside it; so did
		// the second replica of a zone spread, which sees no other zone while no node runs there.
		// A ready node takes the pod as it is: the scheduler binds it there whatever it prefers.
		// A node-affinity preference alone does not count: a claim in flight that may launch as
		// spot or on-demand carries neither label yet, so every shape that prefers spot would
		// refuse it and open a claim of its own.
		nowNodes, laddered := nodeInfos, len(launchingNodes) > 0 && (withDomains || hasTopologyPreferences(pod))
		if laddered {
			nowNodes = ready
		}
		var passOver map[string]bool
		if len(in.Unsettled) > 0 {
			passOver = unsettled.passOver(rel.keys(pod).topology)
		}
		// The node the pod is on its way to first, then first fit.
		var ni fwk.NodeInfo
		if destined := byName[in.Destined[pod.UID]]; destined != nil {
			ni = pl.firstFit(ctx, fitCheck{state, pre, pod, group}, []fwk.NodeInfo{destined}, memo, passOver)
		}
		if ni == nil {
			ni = pl.firstFit(ctx, fitCheck{state, pre, pod, group}, nowNodes, memo, passOver)
		}
		if ni != nil {
			placeOn(ni)
			continue
		}
		asIs := fitCheck{state, pre, pod, group}
		// New capacity: in each shape of the ladder (preferences.go), strictest first, and last as
		// the scheduler sees the pod (domains.go); on the claims this plan opened and then on new
		// claims. The claim books the pod itself.
		var reasons map[string]string
		placed := false
		r := pl.requestsOf(pod)
		asks := simulation.Requests{MilliCPU: r.Cpu().MilliValue(), Memory: r.Memory().Value()}
		passes, shy := passesFor(pod, defaultKeys)
		var kind kindID
		if shy {
			kind = kinds.of(pod)
		}
		guards := podGuards{pod: pod, spec: spec, without: state}
		shunned := shunnedPools(pod, pools)
		capacityViews := shunningViews(pod, newCapacityViews(pod, defaultKeys, len(domains) > 0), shunned)
		waits := false
		// passOver, for every topology key the pod reads, is the cheap test; the spread keys
		// alone decide.
		if len(passOver) > 0 && len(unsettled.passOver(spreadKeysOfPods([]*corev1.Pod{pod}, defaultKeys))) > 0 {
			capacityViews, waits = withoutTheSchedulersView(capacityViews)
		}
		for _, w := range capacityViews {
			as := w.as
			asGroup := group
			if as != pod {
				// A shape is a function of the pod's spec: the spec and the step name it.
				asGroup = groupOf(as, fmt.Sprintf("%s/%d", spec, w.step), defaultKeys)
			}
			views := planned
			if w.domains {
				views = append(planned, domains...)
			}
			pl.sim.Use(snapshot, views...)
			state, pre := state, pre
			// The state above is the pod's against the nodes and claims, without the domains;
			// there is none when it spreads and no node exists.
			if as != pod || w.domains || state == nil {
				var status *fwk.Status
				if state, pre, status = pf.run(ctx, as, spec, w.step, w.domains); status != nil {
					reasons = map[string]string{"": status.Message()}
					continue
				}
			}
			var guard *asScheduled
			if as != pod {
				var status *fwk.Status
				if guard, status = guards.of(ctx, pf, w.domains); status != nil {
					reasons = map[string]string{"": status.Message()}
					continue
				}
			}
			keys := rel.keys(as)
			if laddered {
				// The pod is held to the claim it is planned onto: the scheduler must take it
				// there as it is, whatever the shape says; and, as on the claims this plan
				// opens, the pod must pass beside a shape that is not strictly stricter
				// (preferences.go), with the empty domains when the shape has them.
				shape, also := fitCheck{state, pre, as, asGroup}, make([]fitCheck, 0, 2)
				if as != pod || w.domains {
					also = append(also, asIs)
				}
				if guard != nil && guard.state != asIs.state {
					also = append(also, fitCheck{guard.state, nil, pod, ""})
				}
				// A shape reads every topology key the pod reads, and the keys of the terms
				// its preferences became.
				if ni := pl.firstFit(ctx, shape, launchingNodes, memo, unsettled.passOver(keys.topology), also...); ni != nil {
					placeOn(ni)
					placed = true
					break
				}
			}
			// The claims with room for the pod first, then the others; for a pod that repels its
			// own kind, the claims without it first (fill.go).
			var by byDomain
			if !pl.fresh {
				by = byDomainOf(as, keys)
			}
			for _, pass := range passes {
				rejecting := memo.claimsRejecting(asGroup)
				for i := range rooms.order(open, pass, asks, kind, shy, rejecting, by) {
					oc := open[i]
					if simulation.AllowedByPreFilter(pre, oc.name) && (as == pod || !shunned[oc.pool]) {
						alive, choice := pl.weigh(ctx, oc, as, state, guard, keys)
						if alive == nil {
							rooms.refused(oc)
						} else {
							before, n := oc.info.Node(), len(oc.info.GetPods())
							if pl.add(ctx, oc, pod, info, state, alive, choice) {
								pf.relabelled(oc.info, before, n)
							}
							rooms.changed(i)
							pf.add(info, oc.info)
							if shy {
								oc.holds(kind)
							}
							placed = true
							break
						}
					}
					memo.rejectClaim(asGroup, oc)
				}
				if placed {
					break
				}
			}
			if placed {
				break
			}
			reasons = map[string]string{}
			for _, ps := range pools {
				if why, ok := memo.poolRejected(asGroup, ps); ok {
					reasons[ps.NodePool.Name] = why
					continue
				}
				if as != pod && shunned[ps] {
					reasons[ps.NodePool.Name] = shunnedReason(ps)
					continue
				}
				oc, why := pl.open(ctx, state, pre, as, guard, info, keys, fmt.Sprintf("%s-planned-%d", ps.NodePool.Name, len(open)), ps)
				if oc != nil {
					oc.book(pod)
					if shy {
						oc.holds(kind)
					}
					pf.opened(oc.info)
					open = append(open, oc)
					rooms.opened()
					ps.open = append(ps.open, oc)
					placed = true
					break
				}
				reasons[ps.NodePool.Name] = why
				memo.rejectPool(asGroup, ps, why)
			}
			if placed {
				break
			}
		}
		if !placed {
			if len(pools) == 0 {
				reasons = map[string]string{"": "no NodePool is ready to launch capacity"}
			} else if waits {
				reasons = waitingForOpenClaims(reasons)
			}
			plan.Unplaceable = append(plan.Unplaceable, Unplaceable{Pod: pod, Reasons: reasons})
		}
	}
	pl.reused = pf.reused
	launching = append(launching, countedInFlight(nodeInfos, in.InFlight, in.Spared)...)
	pl.finish(ctx, plan, snapshot, open, launching, defaultKeys, specs)
	return plan
}

// templateInfo is the node the candidate would register as, named name and labelled with choice,
// with the DaemonSet pods it would run already on it.
func (pl *Planner) templateInfo(ctx context.Context, c *candidate, name string, choice labelChoice) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(c.templateNode(name, choice))
	if pl.daemons != nil {
		for _, p := range pl.daemonsOn(ctx, c, pl.daemons) {
			ni.AddPod(onNode(p, name))
		}
	}
	return ni
}

// UIDs returns the pods' UIDs as a set.
func UIDs(pods []*corev1.Pod) map[types.UID]bool {
	out := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		out[p.UID] = true
	}
	return out
}
