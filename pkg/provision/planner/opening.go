package planner

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/explain"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// daemonGroups returns the pool's offerings grouped by the daemons they run, the group with the
// cheapest offering first. Computed once per plan; without DaemonSets, one group of every
// offering, the pool's own list (nodepool.State.Every).
func (pl *Planner) daemonGroups(ctx context.Context, ps *nodepool.State) []nodepool.DaemonGroup {
	if ps.Groups != nil {
		return ps.Groups
	}
	if pl.daemons.Len() == 0 {
		ps.Groups = []nodepool.DaemonGroup{{Offerings: ps.Every()}}
		return ps.Groups
	}
	index := map[string]int{}
	for _, c := range ps.Compatible {
		var ds []*corev1.Pod
		if pl.daemons.Len() > 0 {
			ds = pl.daemons.On(ctx, c)
		}
		names := make([]string, len(ds))
		for i, d := range ds {
			names[i] = string(d.UID)
		}
		key := strings.Join(names, ",")
		g, ok := index[key]
		if !ok {
			g = len(ps.Groups)
			index[key] = g
			ps.Groups = append(ps.Groups, nodepool.DaemonGroup{Daemons: ds})
		}
		ps.Groups[g].Offerings = append(ps.Groups[g].Offerings, c.Index)
	}
	return ps.Groups
}

// open tries to start a new claim in ps for pod. It returns the claim, or why the pool cannot
// hold the pod.
func (pl *Planner) open(ctx context.Context, state fwk.CycleState, pre *fwk.PreFilterResult, pod *corev1.Pod, guard *asScheduled, info fwk.PodInfo, keys podkeys.Keys, name string, ps *nodepool.State) (*openClaim, string) {
	if len(ps.Compatible) == 0 {
		return nil, "no available instance type offering satisfies the NodePool's requirements"
	}
	groups := pl.daemonGroups(ctx, ps)
	allowed, within, limited := ps.WithinLimitsByGroup(groups)
	if len(within) == 0 {
		return nil, exhausted(ps, limited)
	}
	if !simulation.AllowedByPreFilter(pre, name) {
		return nil, "the pod's PreFilter result excludes new nodes"
	}
	if why := ps.UnlabelledReason(pod); why != "" {
		return nil, why
	}
	// A claim grows only as big as the offerings that are cheap for this batch's mix of cpu and
	// memory; a pod that none of them holds (it needs more memory, a GPU) gets a claim that may
	// grow into any. A pod with ResourceClaims goes straight to the latter: the efficient
	// offerings are picked for cpu and memory, not devices, and asking DynamicResources about
	// every type twice doubled what such a pod costs.
	for _, thrifty := range []bool{true, false} {
		if !thrifty && ps.Efficient == nil {
			break
		}
		if thrifty && ps.Efficient != nil && pl.needsDevices(pod) {
			continue
		}
		for g, group := range groups {
			if len(allowed[g]) == 0 {
				continue
			}
			oc := newOpenClaim(name, ps, group.Daemons, allowed[g])
			oc.thrifty = thrifty && ps.Efficient != nil
			if alive, choice := pl.weigh(ctx, oc, pod, state, guard, keys); alive != nil {
				pl.add(ctx, oc, pod, info, state, alive, choice)
				return oc, ""
			}
		}
	}
	// The pod fits no offering. Weigh each one on its own, once, for the plugins' reasons.
	var short string
	for g, group := range groups {
		if len(allowed[g]) > 0 {
			oc := newOpenClaim(name, ps, group.Daemons, allowed[g])
			if alive, _ := pl.weigh(ctx, oc, pod, state, guard, keys); alive == nil && oc.refusal != "" {
				short = oc.refusal
			}
		}
	}
	if short != "" {
		return nil, "the instance types that would hold it fall short of minValues: " + short
	}
	return nil, notExplained
}

// whyNot says why no offering of the pool holds the pod, in the words of the Filter plugins that
// refuse it on each offering weighed on its own. That is a Filter question per offering, so it is
// asked only once no pool holds the pod (newClaim), of the pools open turned it away from with
// notExplained.
func (pl *Planner) whyNot(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, keys podkeys.Keys, name string, ps *nodepool.State) string {
	_, within, limited := ps.WithinLimitsByGroup(pl.daemonGroups(ctx, ps))
	if len(within) == 0 {
		// The plan filled the limit since an identical pod found the pool short of room.
		return exhausted(ps, limited)
	}
	// Label the templates with the pod's first choice of custom values, if it has one, so that the
	// plugins speak of what else turns it away.
	var choice nodepool.LabelChoice
	if choices := ps.Choices(pod, keys, nil); len(choices) > 0 {
		choice = choices[0]
	}
	options := make([]*explain.Option, 0, len(within))
	for _, i := range within {
		c := ps.Compatible[i]
		options = append(options, &explain.Option{C: c, Info: pl.templateInfo(ctx, c, name, choice)})
	}
	statuses := pl.filterOptions(ctx, state, pod, options)
	return explain.Reason(pod, options, statuses) + explain.Devices(pl.sim.DRA(), pod, statuses)
}

// exhausted says which limit of the pool leaves no offering. It counts the claims opened by this
// plan too: the pool's existing claims alone could read "0 of 4 in use" for a limit this plan has
// filled.
func exhausted(ps *nodepool.State, limited corev1.ResourceName) string {
	return fmt.Sprintf("NodePool limit on %s is exhausted (%s of %s in use or planned)", limited,
		explain.QuantityString(ps.Committed(), limited), explain.QuantityString(corev1.ResourceList(ps.NodePool.Spec.Limits), limited))
}

// notExplained is open's reason for a pool none of whose offerings holds the pod, until whyNot
// has weighed them one by one; an Input.Unexplained pod keeps it.
const notExplained = "no offering of the NodePool holds it (not weighed offering by offering)"

// add puts the pod on the claim and, for a pool with limits, recounts the most the claim may
// launch as. It reports whether the claim's node labels changed (see openClaim.add).
func (pl *Planner) add(ctx context.Context, oc *openClaim, pod *corev1.Pod, info fwk.PodInfo, state fwk.CycleState, alive []int, choice nodepool.LabelChoice) bool {
	relabelled := oc.add(pod, pl.requestsOf(pod), info, state, alive, choice)
	if len(oc.pool.NodePool.Spec.Limits) > 0 {
		oc.capacity = oc.pool.MaxCapacity(pl.holding(ctx, oc, 0))
	}
	return relabelled
}

// plannedOfferings are the offerings a claim may launch as: those that hold all its pods,
// cheapest first, no more than MaxInstanceTypes types, and only offerings that the NodeClaim's
// requirements can express (see expressible).
func (pl *Planner) plannedOfferings(ctx context.Context, oc *openClaim) []int {
	compatible := oc.pool.Compatible
	var kept []int
	types := make(map[string]bool, nodeclaim.MaxInstanceTypes)
	for _, i := range pl.holding(ctx, oc, nodeclaim.MaxInstanceTypes) {
		name := compatible[i].It.Name
		if !types[name] && len(types) == nodeclaim.MaxInstanceTypes {
			continue
		}
		types[name] = true
		kept = append(kept, i)
	}
	if oc.pool.MinValuesShort(kept) != "" {
		// Only a claim short of minValues looks past the cheapest types (see widen).
		kept = oc.pool.Widen(kept, pl.holding(ctx, oc, 0))
	}
	return nodepool.Expressible(oc.pool, kept)
}

// claimOf is the claim to create, launching as one of offerings.
func (oc *openClaim) claimOf(offerings []int) *nodeclaim.Planned {
	compatible := oc.pool.Compatible
	pc := &nodeclaim.Planned{NodePool: oc.pool.NodePool, Pods: oc.pods, Daemons: oc.daemons, MinValuesShort: oc.pool.MinValuesShort(offerings), Labels: oc.customLabels()}
	if len(offerings) > 0 {
		pc.Options = make([]nodeclaim.Option, 0, len(offerings))
	}
	for _, i := range offerings {
		pc.Options = append(pc.Options, nodeclaim.Option{InstanceType: compatible[i].It, Offering: compatible[i].Offering})
	}
	return pc
}

// filterOptions runs the Filter plugins for pod on every option in parallel.
func (pl *Planner) filterOptions(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, options []*explain.Option) []*fwk.Status {
	statuses := make([]*fwk.Status, len(options))
	var mu sync.Mutex
	pl.sim.Parallelizer().Until(ctx, len(options), func(i int) {
		s := pl.sim.Filter(ctx, state, pod, options[i].Info)
		mu.Lock()
		statuses[i] = s
		mu.Unlock()
	}, "tailor.planner.filter")
	return statuses
}
