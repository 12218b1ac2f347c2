package nodepool

import "k8s.io/kubernetes/pkg/scheduler/framework"

// FrontierOf returns the types of the offerings that no other of their types dominates: a pod
// that fits none of them fits none of the offerings.
func (ps *State) FrontierOf(offerings []int) []int {
	present := make([]bool, len(ps.Types))
	for _, i := range offerings {
		present[ps.Compatible[i].Typ] = true
	}
	var frontier []int
	for _, t := range ps.bySize {
		if !present[t] {
			continue
		}
		dominated := false
		for _, f := range frontier {
			if dominates(ps.Types[f].Alloc, ps.Types[t].Alloc) {
				dominated = true
				break
			}
		}
		if !dominated {
			frontier = append(frontier, t)
		}
	}
	return frontier
}

// dominates reports whether a has at least as much of every resource as b: a pod that passes
// NodeResourcesFit on b, with the same pods and requests, passes it on a too.
func dominates(a, b *framework.Resource) bool {
	if a.MilliCPU < b.MilliCPU || a.Memory < b.Memory || a.EphemeralStorage < b.EphemeralStorage ||
		a.AllowedPodNumber < b.AllowedPodNumber {
		return false
	}
	for name, q := range b.ScalarResources {
		if a.ScalarResources[name] < q {
			return false
		}
	}
	return true
}
