package planner

import (
	"slices"

	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Indexes of the open claims, so that a pod is not asked of every claim. Every pod a plan places
// used to scan all open claims in each pass: their room for the first pass, the growth of every
// claim without room (then a sort) for the second. At 20,000 pods of Karpenter's mix on 4,000
// claims that was 80 million claim visits and 5 million growths, a third of the plan, and the
// reason a plan's rate fell with the fleet. Both orders are the same as the scan's; the indexes
// only skip the claims the scan would have passed over.
//
//   - roomIndex finds, in opening order, the claims whose room holds the pod's cpu and memory
//     (roomy), without visiting those whose room does not.
//   - growthOrder keeps, for one size of pod, the claims without room for it sorted by
//     growth.compare: from pod to pod only the claims that changed move. A plan alternates
//     between a few sizes (packing.Order takes pods heavy in cpu and in memory in turn), so a
//     few orders are kept.
//
// A claim's room and growth depend on its pods and alive offerings, which change only when a pod
// joins it (changed) or it opens (opened), and on its pool, which does not change during a plan.
// Both are logged, and each index takes in the claims logged since it was last read.

// roomIndex is a segment tree over the claims in opening order: each leaf is a claim's cpu and
// memory room (-1 when it has no room for another pod), each inner node the largest of each
// below it. A subtree whose largest cpu or memory room is short of a pod's holds no claim with
// room for it (the two largest may be of different claims, so the converse does not hold, and
// the search goes down to the leaves to see).
type roomIndex struct {
	leaves   int
	cpu, mem []int64
}

// set records claim i's room, growing the tree to hold it.
func (t *roomIndex) set(i int, room claimRoom) {
	if i >= t.leaves {
		t.grow(i + 1)
	}
	c, m := int64(-1), int64(-1)
	if room.pods > 0 {
		c, m = room.milliCPU, room.memory
	}
	n := t.leaves + i
	t.cpu[n], t.mem[n] = c, m
	for n /= 2; n > 0; n /= 2 {
		t.cpu[n], t.mem[n] = max(t.cpu[2*n], t.cpu[2*n+1]), max(t.mem[2*n], t.mem[2*n+1])
	}
}

// grow doubles the leaves until there are at least n, keeping the rooms recorded.
func (t *roomIndex) grow(n int) {
	leaves := max(t.leaves, 64)
	for leaves < n {
		leaves *= 2
	}
	cpu, mem := make([]int64, 2*leaves), make([]int64, 2*leaves)
	for i := range cpu {
		cpu[i], mem[i] = -1, -1
	}
	copy(cpu[leaves:], t.cpu[t.leaves:])
	copy(mem[leaves:], t.mem[t.leaves:])
	for n := leaves - 1; n > 0; n-- {
		cpu[n], mem[n] = max(cpu[2*n], cpu[2*n+1]), max(mem[2*n], mem[2*n+1])
	}
	t.leaves, t.cpu, t.mem = leaves, cpu, mem
}

// next returns the first claim from from on whose room holds asks, or -1.
func (t *roomIndex) next(from int, asks simulation.Requests) int {
	if from >= t.leaves {
		return -1
	}
	return t.find(1, 0, t.leaves, from, asks.MilliCPU, asks.Memory)
}

func (t *roomIndex) find(n, lo, hi, from int, cpu, mem int64) int {
	if hi <= from || t.cpu[n] < cpu || t.mem[n] < mem {
		return -1
	}
	if hi-lo == 1 {
		return lo
	}
	mid := (lo + hi) / 2
	if i := t.find(2*n, lo, mid, from, cpu, mem); i >= 0 {
		return i
	}
	return t.find(2*n+1, mid, hi, from, cpu, mem)
}

// growthOrder is, for pods asking for one cpu and memory, the claims without room for them in
// growth order, as of the seen-th entry of the claims' change log.
type growthOrder struct {
	milliCPU, memory int64
	sorted           []growth
	// entry is each claim's place in sorted, by claim; in tells whether it has one.
	entry []growth
	in    []bool
	seen  int
	// used is when the order was last read, to drop the one read longest ago.
	used int
}

// keptGrowthOrders is how many sizes of pod keep their order: packing.Order alternates
// between two queues, and a spare few cover the sizes where each queue moves on.
const keptGrowthOrders = 8

// build orders every claim in open afresh.
func (g *growthOrder) build(open []*openClaim, rooms []claimRoom) {
	g.sorted, g.entry, g.in = g.sorted[:0], g.entry[:0], g.in[:0]
	for i := range open {
		e, ok := g.growthOf(open, rooms, i)
		g.entry, g.in = append(g.entry, e), append(g.in, ok)
		if ok {
			g.sorted = append(g.sorted, e)
		}
	}
	slices.SortFunc(g.sorted, growth.compare)
}

// refresh moves claim i to its place in the order, or out of it.
func (g *growthOrder) refresh(open []*openClaim, rooms []claimRoom, i int) {
	for len(g.entry) <= i {
		g.entry, g.in = append(g.entry, growth{}), append(g.in, false)
	}
	if g.in[i] {
		at, _ := slices.BinarySearchFunc(g.sorted, g.entry[i], growth.compare)
		g.sorted = slices.Delete(g.sorted, at, at+1)
	}
	e, ok := g.growthOf(open, rooms, i)
	g.entry[i], g.in[i] = e, ok
	if ok {
		at, _ := slices.BinarySearchFunc(g.sorted, e, growth.compare)
		g.sorted = slices.Insert(g.sorted, at, e)
	}
}

// growthOf is claim i's place in the order, and false when it has room for the pods of the
// order (the first pass): those are weighed in the first pass.
func (g *growthOrder) growthOf(open []*openClaim, rooms []claimRoom, i int) (growth, bool) {
	room, asks := rooms[i], simulation.Requests{MilliCPU: g.milliCPU, Memory: g.memory}
	if room.holds(asks) {
		return growth{}, false
	}
	oc := open[i]
	cost, base := oc.growth(room, asks)
	return growth{rank: oc.pool.Rank, cost: cost, base: base, i: i}, true
}

// of is the order, or, when few, the order of the claims of side alone, gathered into scratch.
func (g *growthOrder) of(side []int, few bool, scratch *[]growth) []growth {
	if !few {
		return g.sorted
	}
	out := (*scratch)[:0]
	for _, i := range side {
		if i < len(g.in) && g.in[i] {
			out = append(out, g.entry[i])
		}
	}
	slices.SortFunc(out, growth.compare)
	*scratch = out
	return out
}

// growthsFor returns the order for pods asking for asks, up to date with every claim in open.
func (r *claimRooms) growthsFor(open []*openClaim, asks simulation.Requests) *growthOrder {
	r.reads++
	var g *growthOrder
	for _, o := range r.orders {
		if o.milliCPU == asks.MilliCPU && o.memory == asks.Memory {
			g = o
			break
		}
	}
	if g == nil {
		if len(r.orders) < keptGrowthOrders {
			g = &growthOrder{}
			r.orders = append(r.orders, g)
		} else {
			g = slices.MinFunc(r.orders, func(a, b *growthOrder) int { return a.used - b.used })
		}
		g.milliCPU, g.memory = asks.MilliCPU, asks.Memory
		g.build(open, r.rooms)
		g.seen = len(r.log)
	}
	g.used = r.reads
	r.stamp++
	for _, i := range r.log[g.seen:] {
		if r.marks[i] != r.stamp {
			r.marks[i] = r.stamp
			g.refresh(open, r.rooms, i)
		}
	}
	g.seen = len(r.log)
	return g
}

// kindSides hold, for each kind of pod that repels its own kind, which claims hold a pod of it:
// a bit per claim in opening order, and how many. Late in a plan nearly every claim holds a pod
// of a kind spread by hostname, so a pass for the claims without it used to skip nearly every
// claim the indexes yielded, and a pass for those with it nearly none; when the claims on the
// pass's side are few (a quarter or fewer), order takes them from the bits instead.
type kindSide struct {
	bits  []uint64
	count int
}

// fewSide is the share of the claims under which the pass's side is read from the bits.
const fewSide = 4

// holds records that claim oc, the i-th to open, holds a pod of kind: openClaim.holds, and its bit.
func (r *claimRooms) holds(oc *openClaim, i int, kind kindID) {
	oc.holds(kind)
	if r.sides == nil {
		r.sides = map[kindID]*kindSide{}
	}
	s := r.sides[kind]
	if s == nil {
		s = &kindSide{}
		r.sides[kind] = s
	}
	for len(s.bits) <= i/64 {
		s.bits = append(s.bits, 0)
	}
	if bit := uint64(1) << (i % 64); s.bits[i/64]&bit == 0 {
		s.bits[i/64] |= bit
		s.count++
	}
}

// side returns, in opening order, the claims of open on pass's side of kind (holding it for a
// kin pass, not holding it otherwise), or false when they are not few enough to be worth it.
func (r *claimRooms) side(open []*openClaim, kind kindID, kin bool) ([]int, bool) {
	s := r.sides[kind]
	count := 0
	if s != nil {
		count = s.count
	}
	if !kin {
		count = len(open) - count
	}
	if count*fewSide > len(open) {
		return nil, false
	}
	out := r.sideScratch[:0]
	for i := range open {
		held := s != nil && i/64 < len(s.bits) && s.bits[i/64]&(1<<(i%64)) != 0
		if held == kin {
			out = append(out, i)
		}
	}
	r.sideScratch = out
	return out, true
}
