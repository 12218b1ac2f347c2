// Package bound is the price lower bound of a set of pods over a catalog: what no plan can beat.
// It is its own package so that a caller that wants only the figure (tailor top) links the
// catalog and the resource algebra, not the scheduler framework the planner runs on.
package bound

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// LowerBound is the least an hour of capacity for pods can cost in the catalog types: the optimum
// of the linear relaxation of covering the pods' summed cpu and memory requests with the
// allocatable of the available offerings,
//
//	minimise Σ price_o·x_o  subject to  Σ cpu_o·x_o ≥ CPU,  Σ mem_o·x_o ≥ MEM,  x ≥ 0.
//
// Any set of nodes that holds the pods is a feasible x (one per node, at the node's price), so no
// plan costs less: the ratio of a plan's price to this bound says how far from optimal it can be.
// The bound is loose where the relaxation is: it buys fractions of nodes, ignores how pods are cut
// into nodes (bin packing), pods-per-node, resources other than cpu and memory, and every
// scheduling constraint. It is 0 when the pods request neither cpu nor memory, and an error when no
// mix of offerings covers them.
//
// With two covering constraints an optimal basic solution uses at most two offerings, each with
// its constraint tight or one offering alone with the other constraint slack, so the optimum is
// the cheapest of: every offering alone, scaled until it covers both sums; and every pair whose
// scaling covers both sums exactly with non-negative amounts. Only the cheapest available offering
// of each instance type can be in an optimum (the others have the same allocatable), so the
// enumeration is quadratic in the number of instance types.
func LowerBound(pods []*corev1.Pod, types []*cloud.InstanceType) (float64, error) {
	var cpu, mem float64 // cores, GiB
	for _, p := range pods {
		r := scheduling.PodRequests(p)
		cpu += float64(r.Cpu().MilliValue()) / 1e3
		mem += float64(r.Memory().Value()) / gib
	}
	return LowerBoundOf(cpu, mem, types)
}

// LowerBoundOf is LowerBound of pods whose requests sum to cpu cores and mem GiB, for callers
// that have summed them already (`tailor top` sums them per node anyway, and on a large cluster
// reading every pod's requests twice is most of a frame).
func LowerBoundOf(cpu, mem float64, types []*cloud.InstanceType) (float64, error) {
	if cpu <= 0 && mem <= 0 {
		return 0, nil
	}
	shapes := make([]shape, 0, len(types))
	for _, it := range types {
		o, ok := it.CheapestOffering(nil)
		if !ok {
			continue
		}
		alloc := it.Allocatable()
		s := shape{cpu: float64(alloc.Cpu().MilliValue()) / 1e3, mem: float64(alloc.Memory().Value()) / gib, price: o.PricePerHour}
		if s.cpu > 0 || s.mem > 0 {
			shapes = append(shapes, s)
		}
	}
	best := math.Inf(1)
	for _, s := range shapes {
		best = math.Min(best, s.alone(cpu, mem))
	}
	for i, a := range shapes {
		for _, b := range shapes[i+1:] {
			best = math.Min(best, mixed(a, b, cpu, mem))
		}
	}
	if math.IsInf(best, 1) {
		return 0, fmt.Errorf("no mix of the %d available instance types covers cpu %g and memory %gGi", len(shapes), cpu, mem)
	}
	return best, nil
}

const gib = 1 << 30

// shape is an instance type as the bound sees it: allocatable cpu (cores) and memory (GiB), and
// the price of its cheapest available offering.
type shape struct{ cpu, mem, price float64 }

// alone is the cost of covering cpu and mem with s alone, +Inf if s lacks one of them.
func (s shape) alone(cpu, mem float64) float64 {
	n := 0.0
	for _, need := range [][2]float64{{cpu, s.cpu}, {mem, s.mem}} {
		if need[0] <= 0 {
			continue
		}
		if need[1] <= 0 {
			return math.Inf(1)
		}
		n = math.Max(n, need[0]/need[1])
	}
	return n * s.price
}

// mixed is the cost of the amounts of a and b that cover cpu and mem exactly, +Inf when there are
// no such non-negative amounts (the shapes are proportional, or the sums lie outside the cone the
// two shapes span). Cramer's rule on
//
//	a.cpu·x + b.cpu·y = cpu
//	a.mem·x + b.mem·y = mem
func mixed(a, b shape, cpu, mem float64) float64 {
	det := a.cpu*b.mem - b.cpu*a.mem
	if det == 0 {
		return math.Inf(1)
	}
	x := (cpu*b.mem - b.cpu*mem) / det
	y := (a.cpu*mem - cpu*a.mem) / det
	if x < 0 || y < 0 {
		return math.Inf(1)
	}
	return x*a.price + y*b.price
}
