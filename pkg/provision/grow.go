package provision

import (
	"cmp"
	"iter"
	"math"
	"slices"

	"github.com/tailor-sh/tailor/pkg/simulation"
)

// The claim that grows for least. A pod that fits no claim's room joins a claim that must launch
// as a dearer type for it. Taking the first claim that opened grew whichever claim came first,
// however far its next holding type was: in Karpenter's benchmark mix, hostname-bound claims
// grew a size for a pod heavy in the resource they were short of, and the fleet launched with a
// sixth of its memory idle (1.16-1.17 × the LP bound at 5,000-20,000 pods). So the claims without
// room are weighed cheapest growth first: the price of the cheapest offering that would hold the
// pod beside the claim's pods, less the price of the one that holds them now. Ties keep the
// order the claims opened. As with room, the price only orders the questions: each claim still
// takes the pod only if the Filter plugins pass (weigh).

// growth is claim i's extra price per hour for a pod.
type growth struct {
	cost float64
	i    int
}

// order yields the indices of the open claims weighed in pass for a pod of kind asking for
// asks, but for those in rejecting: in the order they opened for claims with room, cheapest
// growth first for the others.
func (r *claimRooms) order(open []*openClaim, pass fillPass, asks simulation.Requests, kind kindID, shy bool, rejecting map[*openClaim]bool) iter.Seq[int] {
	return func(yield func(int) bool) {
		queue := r.growths[:0]
		defer func() { r.growths = queue[:0] }()
		for i, oc := range open {
			if !r.in(i, oc, pass, asks, kind, shy) || rejecting[oc] {
				continue
			}
			if pass.roomy {
				if !yield(i) {
					return
				}
				continue
			}
			// Nothing grows for less than nothing, and of the claims that grow for nothing the
			// first to open comes first: such a claim needs no place in the queue.
			cost := oc.growth(r.rooms[i], asks)
			if cost <= 0 {
				if !yield(i) {
					return
				}
				continue
			}
			queue = append(queue, growth{cost: cost, i: i})
		}
		for g := range cheapestFirst(queue) {
			if !yield(g.i) {
				return
			}
		}
	}
}

// selectedFirst is how many claims cheapestFirst picks by a scan of the rest before it sorts
// them: the first claim mostly takes the pod, and a sort per pod cost more than every scan.
const selectedFirst = 4

// cheapestFirst yields queue's growths by cost, then by index, reordering queue in place.
func cheapestFirst(queue []growth) iter.Seq[growth] {
	less := func(a, b growth) int {
		if c := cmp.Compare(a.cost, b.cost); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	}
	return func(yield func(growth) bool) {
		for k := range queue {
			if k == selectedFirst {
				slices.SortFunc(queue[k:], less)
			}
			if k < selectedFirst {
				best := k
				for j := k + 1; j < len(queue); j++ {
					if less(queue[j], queue[best]) < 0 {
						best = j
					}
				}
				queue[k], queue[best] = queue[best], queue[k]
			}
			if !yield(queue[k]) {
				return
			}
		}
	}
}

// growth is how much dearer the claim becomes with asks on it beside its pods: the price of the
// cheapest offering it may grow into that holds them, less that of the cheapest that holds its
// pods now; +Inf when none holds them. A thrifty claim grows only into efficient offerings (see
// rateEfficiency), and is priced from the cheapest efficient one that holds it: a claim that
// holds little is bound to grow at least that far (the plan's biggest pods need it), so room up
// to that offering is free. (Pricing it from the smaller type it would launch as now, which is
// not efficient, turned pods away from the claims that have most room left in what they will
// launch as: 1.10 × the bound at 5,000 and 20,000 pods of the mix against 1.07.)
func (oc *openClaim) growth(room claimRoom, asks simulation.Requests) float64 {
	used, pods := oc.info.Requested, len(oc.info.Pods)
	ps := oc.pool
	// No offering after the claim's cheapest holding one holds less, so the search starts there.
	from, base := max(room.at, 0), -1.0
	for _, i := range oc.alive[from:] {
		if oc.thrifty && ps.efficient != nil && !ps.efficient[i] {
			continue
		}
		c := ps.compatible[i]
		a := ps.types[c.typ].alloc
		if base < 0 && a.MilliCPU >= used.MilliCPU && a.Memory >= used.Memory && a.AllowedPodNumber >= pods {
			base = c.offering.PricePerHour
		}
		if a.MilliCPU >= used.MilliCPU+asks.MilliCPU && a.Memory >= used.Memory+asks.Memory && a.AllowedPodNumber > pods {
			return c.offering.PricePerHour - max(base, 0)
		}
	}
	return math.Inf(1)
}
