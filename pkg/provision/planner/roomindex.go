package planner

import (
	"github.com/tailor-sh/tailor/pkg/provision/planner/roomindex"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// The indexes of the open claims (package roomindex) know claims by their opening order. A
// claim's room and growth depend on its pods and alive offerings, which change only when a pod
// joins it (changed) or it opens (opened), and on its pool, which does not change during a plan.
// Both are logged, and each index takes in the claims logged since it was last read.

// growthsFor returns the order for pods asking for asks, up to date with every claim in open.
func (r *claimRooms) growthsFor(open []*openClaim, asks simulation.Requests) *roomindex.Order[growth] {
	return r.orders.For(asks, len(open), r.log, func(i int, asks simulation.Requests) (growth, bool) {
		room := r.rooms[i]
		if room.holds(asks) {
			return growth{}, false
		}
		oc := open[i]
		cost, base := oc.growth(room, asks)
		return growth{rank: oc.pool.Rank, cost: cost, base: base, i: i}, true
	})
}

// fewSide is the share of the claims under which the pass's side is read from the bits. Late in
// a plan nearly every claim holds a pod of a kind spread by hostname, so a pass for the claims
// without it used to skip nearly every claim the indexes yielded, and a pass for those with it
// nearly none; when the claims on the pass's side are few (a quarter or fewer), order takes them
// from the bits instead.
const fewSide = 4

// holds records that claim oc, the i-th to open, holds a pod of kind: openClaim.holds, and its
// bit in the claims holding kind.
func (r *claimRooms) holds(oc *openClaim, i int, kind kindID) {
	oc.holds(kind)
	if r.sides == nil {
		r.sides = map[kindID]*roomindex.Bits{}
	}
	s := r.sides[kind]
	if s == nil {
		s = &roomindex.Bits{}
		r.sides[kind] = s
	}
	s.Add(i)
}

// side returns, in opening order, the claims of open on pass's side of kind (holding it for a
// kin pass, not holding it otherwise), or false when they are not few enough to be worth it.
func (r *claimRooms) side(open []*openClaim, kind kindID, kin bool) ([]int, bool) {
	s := r.sides[kind]
	count := s.Count()
	if !kin {
		count = len(open) - count
	}
	if count*fewSide > len(open) {
		return nil, false
	}
	out := r.sideScratch[:0]
	for i := range open {
		if s.Has(i) == kin {
			out = append(out, i)
		}
	}
	r.sideScratch = out
	return out, true
}
