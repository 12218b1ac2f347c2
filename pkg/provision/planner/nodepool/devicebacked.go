package nodepool

import corev1 "k8s.io/api/core/v1"

// Extended resources backed by DRA devices (DRAExtendedResource; the planner's devicebacked.go
// says when): a node Tailor launches never advertises such a resource, so while a pending pod
// asks for one, the pools' offerings are weighed without it.

// WithoutBacked are the pools with the resources of backed left out of their offerings'
// allocatable, as their nodes will register. A pool none of whose types advertises one of them
// is returned as it is; one prepared (Prepare) is prepared anew without them.
func WithoutBacked(pools []Pool, backed map[corev1.ResourceName]bool) []Pool {
	if len(backed) == 0 {
		return pools
	}
	out := make([]Pool, len(pools))
	for i, p := range pools {
		out[i] = p
		if !advertisesAny(p, backed) {
			continue
		}
		out[i].deviceBacked = backed
		if p.prepared != nil {
			out[i] = Prepare([]Pool{out[i]})[0]
		}
	}
	return out
}

func advertisesAny(p Pool, backed map[corev1.ResourceName]bool) bool {
	for _, it := range p.InstanceTypes {
		for name := range backed {
			if q, ok := it.Capacity[name]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// allocatableOf is what a node of the type offers the pool's pods: the type's allocatable, less
// the extended resources the node will not advertise since DRA devices back them.
func allocatableOf(p Pool, alloc corev1.ResourceList) corev1.ResourceList {
	for name := range p.deviceBacked {
		delete(alloc, name)
	}
	return alloc
}
