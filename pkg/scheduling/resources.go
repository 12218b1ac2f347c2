package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests returns what the scheduler counts for pod: the larger of init and regular
// containers (sidecars included) plus pod overhead, as the NodeResourcesFit plugin computes it.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// Add returns a + b for every resource in either.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	AddTo(out, b)
	return out
}

// AddTo adds b to sum in place, for sums taken over many lists without a new list for each. The
// quantities of sum must be its own (sum started empty, or deep-copied): adding to a quantity can
// change the decimal it shares with the list it was copied from.
func AddTo(sum, b corev1.ResourceList) {
	for name, q := range b {
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
}

// Fits reports whether want fits in have for every resource named in want.
func Fits(want, have corev1.ResourceList) bool {
	for name, q := range want {
		h, ok := have[name]
		if !ok {
			h = resource.Quantity{}
		}
		if q.Cmp(h) > 0 {
			return false
		}
	}
	return true
}

// Exceeds returns the first resource of limits that used would pass, and false if none.
func Exceeds(used, limits corev1.ResourceList) (corev1.ResourceName, bool) {
	for name, limit := range limits {
		if u, ok := used[name]; ok && u.Cmp(limit) > 0 {
			return name, true
		}
	}
	return "", false
}

// Kept is the room a pending pod keeps on the node a plan sent it to, until it binds: what the
// scheduler's NodeResourcesFit counts of it, and what InterPodAffinity would weigh of it there:
// the pod itself (read only), whose labels another pod's anti-affinity may select, and Excludes,
// which returns the topology keys by which its required anti-affinity excludes another pod from
// the domains of the node it goes to (nil when it has no such terms).
type Kept struct {
	UID      types.UID
	MilliCPU int64
	Memory   int64
	Pod      *corev1.Pod
	Excludes func(other *corev1.Pod) []string
}
