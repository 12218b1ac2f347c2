package gangdomain

import (
	"context"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// TopologyKeyOf returns the node label whose one value every pod of the gang must share, or ""
// when the gang asks for no topology domain.
type TopologyKeyOf func(planner.Gang) string

// PinGangs pins the pending pods of each gang that asks for one topology domain to one domain:
// the one its pods already placed are in, or else the domain whose plan places the whole gang at
// the least price per hour (or, when none can, the most of its pods, so the plan finds it short
// and says so). Pinning adds a required node affinity term on the key to copies of the pods; the
// planner then plans every claim of the gang in that domain. in is returned as it is when gangOf
// is nil (gang scheduling is off) or no gang asks for a domain.
func PinGangs(ctx context.Context, pl *planner.Planner, in planner.Input, gangOf planner.GangOf, keyOf TopologyKeyOf) planner.Input {
	if gangOf == nil {
		return in
	}
	members := map[planner.Gang][]int{}
	keys := map[planner.Gang]string{}
	for i, pod := range in.Pending {
		g, ok := gangOf(pod)
		if !ok {
			continue
		}
		if _, seen := keys[g]; !seen {
			keys[g] = keyOf(g)
		}
		if keys[g] != "" {
			members[g] = append(members[g], i)
		}
	}
	if len(members) == 0 {
		return in
	}
	gangs := make([]planner.Gang, 0, len(members))
	for g := range members {
		gangs = append(gangs, g)
	}
	// Sorted so that the gangs are tried in the same order every round, and the plans agree.
	sort.Slice(gangs, func(i, j int) bool { return gangs[i].String() < gangs[j].String() })
	pending := slices.Clone(in.Pending)
	for _, g := range gangs {
		var pods []*corev1.Pod
		for _, i := range members[g] {
			pods = append(pods, in.Pending[i])
		}
		domain, ok := Choose(ctx, pl, in, gangOf, g, keys[g], pods)
		if !ok {
			continue
		}
		for _, i := range members[g] {
			pending[i] = Pinned(in.Pending[i], keys[g], domain)
		}
	}
	in.Pending = pending
	return in
}

// Choose chooses the domain of key for the gang's pending pods (see PinGangs); false when no
// node or offering carries the key.
func Choose(ctx context.Context, pl *planner.Planner, in planner.Input, gangOf planner.GangOf, g planner.Gang, key string,
	pods []*corev1.Pod) (string, bool) {
	labels := make(map[string]map[string]string, len(in.Nodes))
	for _, n := range in.Nodes {
		labels[n.Name] = n.Labels
	}
	// A gang with a pod already placed has no choice left: the scheduler binds the rest beside it.
	for _, pod := range in.Pods {
		if og, ok := gangOf(pod); ok && og == g {
			if d, ok := labels[pod.Spec.NodeName][key]; ok {
				return d, true
			}
		}
	}
	best, bestPlaced, bestPrice, whole := "", -1, 0.0, false
	for _, d := range Domains(in, key) {
		try := in
		try.Pending = make([]*corev1.Pod, len(pods))
		for i, pod := range pods {
			try.Pending[i] = Pinned(pod, key, d)
		}
		plan := pl.Plan(ctx, try)
		if short := planner.ShortGangs(try, plan, gangOf); len(short) > 0 {
			if !whole && short[0].Placed > bestPlaced {
				best, bestPlaced = d, short[0].Placed
			}
			continue
		}
		price := 0.0
		for _, c := range plan.Claims {
			if len(c.Options) > 0 {
				price += c.Options[0].Offering.PricePerHour
			}
		}
		if !whole || price < bestPrice {
			best, bestPrice, whole = d, price, true
		}
	}
	if best != "" {
		klog.FromContext(ctx).V(1).Info("Planning a gang in one topology domain", "podGroup", g.String(), "key", key, "domain", best, "whole", whole)
	}
	return best, best != ""
}

// Domains are the values of key that capacity can have: those of the nodes, and of what the
// NodePools can launch (zones, capacity types, instance types' and offerings' labels), sorted.
func Domains(in planner.Input, key string) []string {
	set := map[string]bool{}
	for _, n := range in.Nodes {
		if v, ok := n.Labels[key]; ok {
			set[v] = true
		}
	}
	for _, pool := range in.Pools {
		for _, it := range pool.InstanceTypes {
			for _, o := range it.Offerings {
				switch v, ok := o.Labels[key]; {
				case key == corev1.LabelTopologyZone:
					set[o.Zone] = true
				case ok:
					set[v] = true
				}
			}
			if v, ok := it.Labels[key]; ok {
				set[v] = true
			}
		}
		if v, ok := pool.NodePool.Spec.Template.Labels[key]; ok {
			set[v] = true
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Pinned is a copy of pod that only nodes whose label key is value accept: the requirement is
// added to every term of its required node affinity (the terms are ORed).
func Pinned(pod *corev1.Pod, key, value string) *corev1.Pod {
	out := pod.DeepCopy()
	req := corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}
	if out.Spec.Affinity == nil {
		out.Spec.Affinity = &corev1.Affinity{}
	}
	if out.Spec.Affinity.NodeAffinity == nil {
		out.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := out.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, req)
	}
	return out
}
