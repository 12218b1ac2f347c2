package planner

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// daemonGroup are the pool's offerings that run the same DaemonSet pods. A claim stays within
// one group, so that its daemons, and the room they take, are the same whatever it launches as.
type daemonGroup struct {
	daemons   []*corev1.Pod
	offerings []int
}

// daemonGroups returns the pool's offerings grouped by the daemons they run, the group with the
// cheapest offering first. Computed once per plan.
func (pl *Planner) daemonGroups(ctx context.Context, ps *poolState) []daemonGroup {
	if ps.groups != nil {
		return ps.groups
	}
	index := map[string]int{}
	for _, c := range ps.compatible {
		var ds []*corev1.Pod
		if pl.daemons != nil && len(pl.daemons.pods) > 0 {
			ds = pl.daemonsOn(ctx, c, pl.daemons)
		}
		names := make([]string, len(ds))
		for i, d := range ds {
			names[i] = string(d.UID)
		}
		key := strings.Join(names, ",")
		g, ok := index[key]
		if !ok {
			g = len(ps.groups)
			index[key] = g
			ps.groups = append(ps.groups, daemonGroup{daemons: ds})
		}
		ps.groups[g].offerings = append(ps.groups[g].offerings, c.index)
	}
	return ps.groups
}

// open tries to start a new claim in ps for pod. It returns the claim, or why the pool cannot
// hold the pod.
func (pl *Planner) open(ctx context.Context, state fwk.CycleState, pre *fwk.PreFilterResult, pod *corev1.Pod, guard *asScheduled, info fwk.PodInfo, keys podkeys.Keys, name string, ps *poolState) (*openClaim, string) {
	if len(ps.compatible) == 0 {
		return nil, "no available instance type offering satisfies the NodePool's requirements"
	}
	groups := pl.daemonGroups(ctx, ps)
	allowed, within, limited := ps.withinLimitsByGroup(groups)
	if len(within) == 0 {
		// Report what counts against the limit, claims opened by this plan included: the pool's
		// existing claims alone could read "0 of 4 in use" for a limit this plan has filled.
		return nil, fmt.Sprintf("NodePool limit on %s is exhausted (%s of %s in use or planned)", limited,
			quantityString(ps.committed(), limited), quantityString(corev1.ResourceList(ps.NodePool.Spec.Limits), limited))
	}
	if !simulation.AllowedByPreFilter(pre, name) {
		return nil, "the pod's PreFilter result excludes new nodes"
	}
	if why := ps.unlabelledReason(pod); why != "" {
		return nil, why
	}
	// A claim grows only as big as the offerings that are cheap for this batch's mix of cpu and
	// memory; a pod that none of them holds (it needs more memory, a GPU) gets a claim that may
	// grow into any. A pod with ResourceClaims goes straight to the latter: the efficient
	// offerings are picked for cpu and memory, not devices, and asking DynamicResources about
	// every type twice doubled what such a pod costs.
	for _, thrifty := range []bool{true, false} {
		if !thrifty && ps.efficient == nil {
			break
		}
		if thrifty && ps.efficient != nil && needsDevices(pod) {
			continue
		}
		for g, group := range groups {
			if len(allowed[g]) == 0 {
				continue
			}
			oc := newOpenClaim(name, ps, group.daemons, allowed[g])
			oc.thrifty = thrifty && ps.efficient != nil
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
			oc := newOpenClaim(name, ps, group.daemons, allowed[g])
			if alive, _ := pl.weigh(ctx, oc, pod, state, guard, keys); alive == nil && oc.refusal != "" {
				short = oc.refusal
			}
		}
	}
	if short != "" {
		return nil, "the instance types that would hold it fall short of minValues: " + short
	}
	// Label the templates with the pod's first choice of custom values, if it has one, so that the
	// plugins speak of what else turns it away.
	var choice labelChoice
	if choices := ps.choices(pod, keys, nil); len(choices) > 0 {
		choice = choices[0]
	}
	options := make([]*option, 0, len(within))
	for _, i := range within {
		c := ps.compatible[i]
		options = append(options, &option{c: c, info: pl.templateInfo(ctx, c, name, choice)})
	}
	statuses := pl.filterOptions(ctx, state, pod, options)
	return nil, explain(pod, options, statuses) + pl.explainDevices(pod, statuses)
}

// withinLimitsByGroup returns, per daemon group, the offerings the pool's limits still allow a
// new claim to launch as, all of them together, and a resource whose limit refused one.
func (ps *poolState) withinLimitsByGroup(groups []daemonGroup) (allowed [][]int, within []int, limited corev1.ResourceName) {
	allowed = make([][]int, len(groups))
	for g, group := range groups {
		if len(ps.NodePool.Spec.Limits) == 0 {
			allowed[g] = group.offerings
			within = append(within, group.offerings...)
			continue
		}
		for _, i := range group.offerings {
			if name, ok := ps.withinLimits(ps.compatible[i].it); !ok {
				limited = name
				continue
			}
			allowed[g] = append(allowed[g], i)
			within = append(within, i)
		}
	}
	return allowed, within, limited
}

// add puts the pod on the claim and, for a pool with limits, recounts the most the claim may
// launch as. It reports whether the claim's node labels changed (see openClaim.add).
func (pl *Planner) add(ctx context.Context, oc *openClaim, pod *corev1.Pod, info fwk.PodInfo, state fwk.CycleState, alive []int, choice labelChoice) bool {
	relabelled := oc.add(pod, pl.requestsOf(pod), info, state, alive, choice)
	if len(oc.pool.NodePool.Spec.Limits) > 0 {
		oc.capacity = oc.pool.maxCapacity(pl.holding(ctx, oc, 0))
	}
	return relabelled
}

// maxCapacity is the most a claim with these offerings can end up launching, counted against
// limits until it does.
func (ps *poolState) maxCapacity(offerings []int) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, i := range offerings {
		for name, q := range ps.compatible[i].it.Capacity {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q
			}
		}
	}
	return out
}

// plannedOfferings are the offerings a claim may launch as: those that hold all its pods,
// cheapest first, no more than MaxInstanceTypes types, and only offerings that the NodeClaim's
// requirements can express (see expressible).
func (pl *Planner) plannedOfferings(ctx context.Context, oc *openClaim) []int {
	compatible := oc.pool.compatible
	var kept []int
	types := map[string]bool{}
	for _, i := range pl.holding(ctx, oc, MaxInstanceTypes) {
		name := compatible[i].it.Name
		if !types[name] && len(types) == MaxInstanceTypes {
			continue
		}
		types[name] = true
		kept = append(kept, i)
	}
	if oc.pool.minValuesShort(kept) != "" {
		// Only a claim short of minValues looks past the cheapest types (see widen).
		kept = oc.pool.widen(kept, pl.holding(ctx, oc, 0))
	}
	return expressible(oc.pool, kept)
}

// claimOf is the claim to create, launching as one of offerings.
func (oc *openClaim) claimOf(offerings []int) *PlannedClaim {
	compatible := oc.pool.compatible
	pc := &PlannedClaim{NodePool: oc.pool.NodePool, Pods: oc.pods, Daemons: oc.daemons, MinValuesShort: oc.pool.minValuesShort(offerings), Labels: oc.customLabels()}
	for _, i := range offerings {
		pc.Options = append(pc.Options, Option{InstanceType: compatible[i].it, Offering: compatible[i].offering})
	}
	return pc
}

// expressible narrows offerings to what a NodeClaim can say. Its requirements list instance
// types, zones and capacity types separately, so the cloud may launch any combination of them;
// when that product holds an offering of the pool that a Filter turned away (a type in a zone
// the pods may not use), only the cheapest offering's zone and capacity type are kept.
func expressible(ps *poolState, offerings []int) []int {
	types, zones, capacity, kept := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[int]bool{}
	for _, i := range offerings {
		c := ps.compatible[i]
		types[c.it.Name], zones[c.offering.Zone], capacity[c.offering.CapacityType], kept[i] = true, true, true, true
	}
	exact := true
	for _, c := range ps.compatible {
		if types[c.it.Name] && zones[c.offering.Zone] && capacity[c.offering.CapacityType] && !kept[c.index] {
			exact = false
			break
		}
	}
	if exact {
		return offerings
	}
	cheapest := ps.compatible[offerings[0]].offering
	var out []int
	for _, i := range offerings {
		o := ps.compatible[i].offering
		if o.Zone == cheapest.Zone && o.CapacityType == cheapest.CapacityType {
			out = append(out, i)
		}
	}
	return out
}

// filterOptions runs the Filter plugins for pod on every option in parallel.
func (pl *Planner) filterOptions(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, options []*option) []*fwk.Status {
	statuses := make([]*fwk.Status, len(options))
	var mu sync.Mutex
	pl.sim.Parallelizer().Until(ctx, len(options), func(i int) {
		s := pl.sim.Filter(ctx, state, pod, options[i].info)
		mu.Lock()
		statuses[i] = s
		mu.Unlock()
	}, "tailor.planner.filter")
	return statuses
}
