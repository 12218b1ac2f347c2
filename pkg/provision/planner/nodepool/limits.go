package nodepool

import (
	"slices"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// withinLimits reports whether launching it keeps the pool under its limits, and if not, which
// limit it would pass.
func (ps *State) withinLimits(it *cloud.InstanceType) (corev1.ResourceName, bool) {
	limits := corev1.ResourceList(ps.NodePool.Spec.Limits)
	if len(limits) == 0 {
		return "", true
	}
	used := scheduling.Add(ps.Committed(), it.Capacity)
	used = scheduling.Add(used, corev1.ResourceList{ResourceNodes: *resource.NewQuantity(1, resource.DecimalSI)})
	if name, over := scheduling.Exceeds(used, limits); over {
		return name, false
	}
	return "", true
}

// Committed is what counts against the pool's limits before another claim: its existing claims
// (Used) and the most that the claims opened by this plan may launch, with "nodes" counting both.
func (ps *State) Committed() corev1.ResourceList {
	used := scheduling.Add(ps.Used, nil)
	for _, capacity := range ps.OpenCapacity {
		used = scheduling.Add(used, *capacity)
	}
	if len(ps.OpenCapacity) > 0 {
		used = scheduling.Add(used, corev1.ResourceList{ResourceNodes: *resource.NewQuantity(int64(len(ps.OpenCapacity)), resource.DecimalSI)})
	}
	return used
}

// DaemonGroup are the pool's offerings that run the same DaemonSet pods. A claim stays within
// one group, so that its daemons, and the room they take, are the same whatever it launches as.
type DaemonGroup struct {
	Daemons   []*corev1.Pod
	Offerings []int
}

// WithinLimitsByGroup returns, per daemon group, the offerings the pool's limits still allow a
// new claim to launch as, all of them together, and a resource whose limit refused one.
func (ps *State) WithinLimitsByGroup(groups []DaemonGroup) (allowed [][]int, within []int, limited corev1.ResourceName) {
	allowed = make([][]int, len(groups))
	if len(ps.NodePool.Spec.Limits) == 0 && len(groups) == 1 {
		// Read only by the caller: the group's own list serves as both.
		return [][]int{groups[0].Offerings}, groups[0].Offerings, ""
	}
	for g, group := range groups {
		if len(ps.NodePool.Spec.Limits) == 0 {
			allowed[g] = group.Offerings
			within = append(within, group.Offerings...)
			continue
		}
		for _, i := range group.Offerings {
			if name, ok := ps.withinLimits(ps.Compatible[i].It); !ok {
				limited = name
				continue
			}
			allowed[g] = append(allowed[g], i)
			within = append(within, i)
		}
	}
	return allowed, within, limited
}

// MaxCapacity is the most a claim with these offerings can end up launching, counted against
// limits until it does.
func (ps *State) MaxCapacity(offerings []int) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, i := range offerings {
		for name, q := range ps.Compatible[i].It.Capacity {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q
			}
		}
	}
	return out
}

// Expressible narrows offerings to what a NodeClaim can say. Its requirements list instance
// types, zones and capacity types separately, so the cloud may launch any combination of them;
// when that product holds an offering of the pool that a Filter turned away (a type in a zone
// the pods may not use), only the cheapest offering's zone and capacity type are kept. The
// product is read through the offerings of the named types alone (ByTypeName), so the question
// costs what the claim's types offer, not what the pool's catalog does.
func Expressible(ps *State, offerings []int) []int {
	if len(offerings) == 0 {
		return offerings
	}
	byName := ps.ByTypeName()
	kept := make([]bool, len(ps.Compatible))
	var names, zones, capacity []string
	for _, i := range offerings {
		c := ps.Compatible[i]
		kept[i] = true
		names, zones, capacity = appendNew(names, c.It.Name), appendNew(zones, c.Offering.Zone), appendNew(capacity, c.Offering.CapacityType)
	}
	exact := true
	for _, name := range names {
		for _, j := range byName[name] {
			o := ps.Compatible[j].Offering
			if !kept[j] && slices.Contains(zones, o.Zone) && slices.Contains(capacity, o.CapacityType) {
				exact = false
				break
			}
		}
	}
	if exact {
		return offerings
	}
	cheapest := ps.Compatible[offerings[0]].Offering
	var out []int
	for _, i := range offerings {
		o := ps.Compatible[i].Offering
		if o.Zone == cheapest.Zone && o.CapacityType == cheapest.CapacityType {
			out = append(out, i)
		}
	}
	return out
}

// appendNew appends v to set unless it is there already.
func appendNew(set []string, v string) []string {
	if slices.Contains(set, v) {
		return set
	}
	return append(set, v)
}

// ByTypeName returns the places in Compatible of each instance type's offerings, by the type's
// name, cheapest first. It depends on the catalog alone: a prepared pool works it out once.
func (ps *State) ByTypeName() map[string][]int {
	if ps.byTypeName == nil {
		ps.byTypeName = make(map[string][]int, len(ps.Types))
		for i, c := range ps.Compatible {
			ps.byTypeName[c.It.Name] = append(ps.byTypeName[c.It.Name], i)
		}
	}
	return ps.byTypeName
}
