package roomindex

import (
	"slices"

	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Entry is a claim's place in a growth order: Compare orders two entries, and never finds those
// of distinct claims equal (the order and the search of an entry in it rely on that).
type Entry[E any] interface {
	Compare(E) int
}

// Order is, for pods asking for one cpu and memory, the claims without room for them in the
// order of their entries, as of the seen-th entry of the claims' change log.
type Order[E Entry[E]] struct {
	asks   simulation.Requests
	sorted []E
	// entry is each claim's place in sorted, by claim; in tells whether it has one.
	entry []E
	in    []bool
	seen  int
	// used is when the order was last read, to drop the one read longest ago.
	used int
}

// keptOrders is how many sizes of pod keep their order: packing.Order alternates between two
// queues, and a spare few cover the sizes where each queue moves on.
const keptOrders = 8

// Orders keeps the orders of the last sizes of pod asked about. The zero Orders is empty.
type Orders[E Entry[E]] struct {
	kept []*Order[E]
	// reads counts the asks; marks and stamp pick out each claim once from the log.
	reads, stamp int
	marks        []int
}

// EntryOf returns claim i's entry in the order for pods asking for asks, and false when its room
// holds them (such claims are weighed in order of opening, not of growth).
type EntryOf[E any] func(i int, asks simulation.Requests) (E, bool)

func compare[E Entry[E]](a, b E) int { return a.Compare(b) }

// For returns the order for pods asking for asks, up to date with the first n claims: an order
// built afresh reads every claim, one kept reads the claims of log it has not read yet (log
// lists the claims that opened or changed, in order, and only grows during a plan).
func (o *Orders[E]) For(asks simulation.Requests, n int, log []int, of EntryOf[E]) *Order[E] {
	o.reads++
	var g *Order[E]
	for _, k := range o.kept {
		if k.asks == asks {
			g = k
			break
		}
	}
	if g == nil {
		if len(o.kept) < keptOrders {
			g = &Order[E]{}
			o.kept = append(o.kept, g)
		} else {
			g = slices.MinFunc(o.kept, func(a, b *Order[E]) int { return a.used - b.used })
		}
		g.asks = asks
		g.build(n, of)
		g.seen = len(log)
	}
	g.used = o.reads
	o.stamp++
	for _, i := range log[g.seen:] {
		for len(o.marks) <= i {
			o.marks = append(o.marks, 0)
		}
		if o.marks[i] != o.stamp {
			o.marks[i] = o.stamp
			g.refresh(i, of)
		}
	}
	g.seen = len(log)
	return g
}

// build orders the first n claims afresh.
func (g *Order[E]) build(n int, of EntryOf[E]) {
	g.sorted, g.entry, g.in = g.sorted[:0], g.entry[:0], g.in[:0]
	for i := range n {
		e, ok := of(i, g.asks)
		g.entry, g.in = append(g.entry, e), append(g.in, ok)
		if ok {
			g.sorted = append(g.sorted, e)
		}
	}
	slices.SortFunc(g.sorted, compare[E])
}

// refresh moves claim i to its place in the order, or out of it.
func (g *Order[E]) refresh(i int, of EntryOf[E]) {
	for len(g.entry) <= i {
		var zero E
		g.entry, g.in = append(g.entry, zero), append(g.in, false)
	}
	if g.in[i] {
		at, _ := slices.BinarySearchFunc(g.sorted, g.entry[i], compare[E])
		g.sorted = slices.Delete(g.sorted, at, at+1)
	}
	e, ok := of(i, g.asks)
	g.entry[i], g.in[i] = e, ok
	if ok {
		at, _ := slices.BinarySearchFunc(g.sorted, e, compare[E])
		g.sorted = slices.Insert(g.sorted, at, e)
	}
}

// Of is the order, or, when few, the order of the claims of side alone, gathered into scratch.
func (g *Order[E]) Of(side []int, few bool, scratch *[]E) []E {
	if !few {
		return g.sorted
	}
	out := (*scratch)[:0]
	for _, i := range side {
		if i < len(g.in) && g.in[i] {
			out = append(out, g.entry[i])
		}
	}
	slices.SortFunc(out, compare[E])
	*scratch = out
	return out
}
