// Package bound is the price lower bound of a set of pods over a catalog: what no plan can beat.
// It is its own package so that a caller that wants only the figure (tailor top) links the
// catalog and the resource algebra, not the scheduler framework the planner runs on.
package bound

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// LowerBound is the least an hour of capacity for pods can cost in the catalog types: the optimum
// of the linear relaxation of covering the pods' summed cpu and memory requests with the
// allocatable of the available offerings (LowerBoundOf), tightened by what the relaxation leaves
// out most: that a pod runs only on a type whose allocatable holds it.
//
// The relaxation alone buys fractions of nodes, so a catalog with tiny, cheap types (EC2's nano
// and micro sizes, a few cents a vCPU) lets it cover most of the cpu with nodes no pod fits on,
// and a plan on such a catalog looks twice as dear as it is. The tightening is sound: for pods
// at least c cores and m GiB each, the nodes that hold them are of types with at least c and m
// allocatable, so those pods' sums covered by those types alone is also a floor under any plan.
// LowerBound is the largest of these floors over a grid of thresholds drawn from the pods' own
// requests (at most fitGrid values of each), the plain relaxation among them. It still ignores
// bin packing, pods-per-node, resources other than cpu and memory, and every scheduling
// constraint. It is 0 when the pods request neither cpu nor memory, and an error when no mix of
// offerings covers them.
func LowerBound(pods []*corev1.Pod, types []*cloud.InstanceType) (float64, error) {
	reqs := make([]shape, len(pods))
	var cpu, mem float64 // cores, GiB
	for i, p := range pods {
		r := scheduling.PodRequests(p)
		reqs[i] = shape{cpu: float64(r.Cpu().MilliValue()) / 1e3, mem: float64(r.Memory().Value()) / gib}
		cpu += reqs[i].cpu
		mem += reqs[i].mem
	}
	shapes := shapesOf(types)
	best, err := lowest(cpu, mem, shapes)
	if err != nil {
		return 0, err
	}
	for _, c := range grid(reqs, func(s shape) float64 { return s.cpu }) {
		for _, m := range grid(reqs, func(s shape) float64 { return s.mem }) {
			var sumCPU, sumMem float64
			for _, r := range reqs {
				if r.cpu >= c && r.mem >= m {
					sumCPU, sumMem = sumCPU+r.cpu, sumMem+r.mem
				}
			}
			var fit []shape
			for _, s := range shapes {
				if s.cpu >= c && s.mem >= m {
					fit = append(fit, s)
				}
			}
			// No type holds these pods: the plan did not place them either (callers pass the
			// placed pods), so the threshold says nothing.
			if floor, err := lowest(sumCPU, sumMem, fit); err == nil {
				best = math.Max(best, floor)
			}
		}
	}
	return best, nil
}

// fitGrid is how many values of each resource LowerBound tries as thresholds: the floors it
// takes are sound at any threshold, so fewer only loosen the bound, and keep it quick for pods
// of many sizes.
const fitGrid = 8

// grid returns up to fitGrid of the distinct values of one resource of reqs, the smallest among
// them, evenly spread over the sorted values.
func grid(reqs []shape, of func(shape) float64) []float64 {
	seen := map[float64]bool{}
	var values []float64
	for _, r := range reqs {
		if v := of(r); !seen[v] {
			seen[v] = true
			values = append(values, v)
		}
	}
	sort.Float64s(values)
	if len(values) <= fitGrid {
		return values
	}
	out := make([]float64, fitGrid)
	for i := range out {
		out[i] = values[i*(len(values)-1)/(fitGrid-1)]
	}
	return out
}

// LowerBoundOf is the linear relaxation of covering cpu cores and mem GiB with the allocatable
// of the available offerings of types,
//
//	minimise Σ price_o·x_o  subject to  Σ cpu_o·x_o ≥ CPU,  Σ mem_o·x_o ≥ MEM,  x ≥ 0.
//
// Any set of nodes that holds pods of those sums is a feasible x (one per node, at the node's
// price), so no plan costs less. It is for callers that have summed the requests already and
// want it quick (tailor top sums them per node anyway, and on a large cluster reading every
// pod's requests twice is most of a frame); LowerBound is the same, tightened by which types each
// pod fits.
//
// With two covering constraints an optimal basic solution uses at most two offerings, each with
// its constraint tight or one offering alone with the other constraint slack, so the optimum is
// the cheapest of: every offering alone, scaled until it covers both sums; and every pair whose
// scaling covers both sums exactly with non-negative amounts. Only the cheapest available offering
// of each instance type can be in an optimum (the others have the same allocatable), and only a
// type no other beats per dollar in both cpu and memory (see frontier).
func LowerBoundOf(cpu, mem float64, types []*cloud.InstanceType) (float64, error) {
	return lowest(cpu, mem, shapesOf(types))
}

// shapesOf is each type with an available offering as the bound sees it.
func shapesOf(types []*cloud.InstanceType) []shape {
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
	return shapes
}

// lowest is LowerBoundOf over shapes.
func lowest(cpu, mem float64, shapes []shape) (float64, error) {
	if cpu <= 0 && mem <= 0 {
		return 0, nil
	}
	front := frontier(shapes)
	best := math.Inf(1)
	for _, s := range front {
		best = math.Min(best, s.alone(cpu, mem))
	}
	for i, a := range front {
		for _, b := range front[i+1:] {
			best = math.Min(best, mixed(a, b, cpu, mem))
		}
	}
	if math.IsInf(best, 1) {
		return 0, fmt.Errorf("no mix of the %d available instance types covers cpu %g and memory %gGi", len(shapes), cpu, mem)
	}
	return best, nil
}

// frontier drops the shapes that another gives at least as much cpu and memory per dollar as
// (a free shape is kept as it is: nothing beats it). Any amount of a dropped shape can be
// replaced by the other at no more cost, so the relaxation's optimum is unchanged, and the pairs
// left to try are a few dozen on EC2's catalog instead of nearly a million.
func frontier(shapes []shape) []shape {
	perDollar := func(s shape) (float64, float64) {
		if s.price <= 0 {
			return math.Inf(1), math.Inf(1)
		}
		return s.cpu / s.price, s.mem / s.price
	}
	sorted := slices.Clone(shapes)
	sort.SliceStable(sorted, func(i, j int) bool {
		ci, mi := perDollar(sorted[i])
		cj, mj := perDollar(sorted[j])
		if ci != cj {
			return ci > cj
		}
		return mi > mj
	})
	var out []shape
	bestMem := math.Inf(-1)
	for _, s := range sorted {
		if _, m := perDollar(s); m > bestMem || math.IsInf(m, 1) {
			out = append(out, s)
			bestMem = math.Max(bestMem, m)
		}
	}
	return out
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
