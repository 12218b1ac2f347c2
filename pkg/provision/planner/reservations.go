package planner

import "github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"

// A capacity reservation takes as many more instances as its offerings' ReservationCapacity says,
// and a plan must not count on more. Its offerings are the cheapest there are, so every claim that
// may launch as one lists it first; without a count, a plan of three nodes for a reservation with
// two slots left priced all three as reserved, and the third fell back to on-demand only at launch
// (the AWS provider's fallback), after the plan had been weighed, by the provisioner and by
// consolidation, at the reserved price. So the claims take the reservation's slots in the order
// the plan opened them, each claim one slot of every reservation it may launch into (as
// Karpenter's scheduler reserves them), and the claims after those launch without its offerings.
// A claim that may launch into nothing else keeps them, as does one that would otherwise fall
// short of its pool's minValues: its launch then finds the reservation full, as before.
//
// The count is per plan: claims created by an earlier plan and not launched yet are not in it (the
// AWS provider's count covers launches, finished and in flight), so two plans in a row can still
// ask one slot twice; the launch's fallback covers that.

// reservationLedger counts, for one plan, the slots of each reservation its claims took.
type reservationLedger struct {
	capacity map[string]int
	taken    map[string]int
}

func newReservationLedger() *reservationLedger {
	return &reservationLedger{capacity: map[string]int{}, taken: map[string]int{}}
}

// take gives the claim that launches as one of offerings (indexes into the pool's Compatible) a
// slot of each reservation among them with one left, and returns offerings without those of the
// reservations that have none, unless that would leave none.
func (l *reservationLedger) take(pool *nodepool.State, offerings []int) []int {
	compatible := pool.Compatible
	var full map[string]bool
	seen := map[string]bool{}
	for _, i := range offerings {
		o := compatible[i].Offering
		if o.ReservationID == "" || seen[o.ReservationID] {
			continue
		}
		seen[o.ReservationID] = true
		// Pools that share a reservation may have read its count at different times: the
		// smaller count is the later one, or the safer.
		if c, ok := l.capacity[o.ReservationID]; !ok || o.ReservationCapacity < c {
			l.capacity[o.ReservationID] = o.ReservationCapacity
		}
		if l.taken[o.ReservationID] >= l.capacity[o.ReservationID] {
			if full == nil {
				full = map[string]bool{}
			}
			full[o.ReservationID] = true
		}
	}
	kept := offerings
	if len(full) > 0 {
		kept = make([]int, 0, len(offerings))
		for _, i := range offerings {
			if !full[compatible[i].Offering.ReservationID] {
				kept = append(kept, i)
			}
		}
		// Nothing left, or too little for the pool's minValues that the offerings met: the claim
		// keeps them, and its launch finds the reservation full.
		if kept = nodepool.Expressible(pool, kept); len(kept) == 0 || (pool.MinValuesShort(kept) != "" && pool.MinValuesShort(offerings) == "") {
			kept = offerings
		}
	}
	counted := map[string]bool{}
	for _, i := range kept {
		if id := compatible[i].Offering.ReservationID; id != "" && !full[id] && !counted[id] {
			counted[id] = true
			l.taken[id]++
		}
	}
	return kept
}
