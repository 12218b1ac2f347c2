package simulation

import (
	fwk "k8s.io/kube-scheduler/framework"
)

// A probe of a disruption pass changes a handful of the snapshot's nodes and reverts them, while
// each of its pods asks questions about all of them: which nodes are not ruled out for room
// (first fit), and which hold pods with affinity terms (InterPodAffinity's PreFilter). Walking
// every node for each pod made a probe on 5,000 nodes cost milliseconds. The snapshot keeps the
// answers instead, brought up to date at the next question for the nodes changed since (every
// change goes through writable or Revert, which mark the node): the answers are those of a walk
// over the nodes as they are now, in the same order.

// changed is a set of positions in the snapshot's sorted list, in the order first marked.
type changed struct {
	marked []bool
	list   []int
}

func newChanged(n int) changed { return changed{marked: make([]bool, n)} }

func (c *changed) mark(i int) {
	if !c.marked[i] {
		c.marked[i] = true
		c.list = append(c.list, i)
	}
}

// drain calls fn for each marked position and clears the set.
func (c *changed) drain(fn func(i int)) {
	for _, i := range c.list {
		c.marked[i] = false
		fn(i)
	}
	c.list = c.list[:0]
}

// free is what a node has left of what NoRoom checks: pod slots, millicpu and memory bytes.
type free struct{ pods, milliCPU, memory int64 }

func freeOn(ni fwk.NodeInfo) free {
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	return free{pods: int64(alloc.GetAllowedPodNumber() - len(ni.GetPods())),
		milliCPU: alloc.GetMilliCPU() - used.GetMilliCPU(), memory: alloc.GetMemory() - used.GetMemory()}
}

// holds reports whether a pod asking for at least r may fit in f: NoRoom's test, negated.
func (f free) holds(r Requests) bool {
	return f.pods >= 1 && (r.MilliCPU <= 0 || r.MilliCPU <= f.milliCPU) && (r.Memory <= 0 || r.Memory <= f.memory)
}

// roomTree is a segment tree over the sorted nodes: each inner entry holds the most of each
// resource any node below it has left (each on its own), so a search passes over a subtree in
// which no node has enough of one of them.
type roomTree struct {
	n, size int
	most    []free
	changed changed
}

func newRoomTree(nodes []fwk.NodeInfo) *roomTree {
	size := 1
	for size < len(nodes) {
		size *= 2
	}
	t := &roomTree{n: len(nodes), size: size, most: make([]free, 2*size), changed: newChanged(len(nodes))}
	for i, ni := range nodes {
		t.most[size+i] = freeOn(ni)
	}
	for v := size - 1; v >= 1; v-- {
		t.pull(v)
	}
	return t
}

func (t *roomTree) pull(v int) {
	a, b := t.most[2*v], t.most[2*v+1]
	t.most[v] = free{pods: max(a.pods, b.pods), milliCPU: max(a.milliCPU, b.milliCPU), memory: max(a.memory, b.memory)}
}

// refresh reads the changed nodes again.
func (t *roomTree) refresh(nodes []fwk.NodeInfo) {
	t.changed.drain(func(i int) {
		v := t.size + i
		t.most[v] = freeOn(nodes[i])
		for v /= 2; v >= 1; v /= 2 {
			t.pull(v)
		}
	})
}

// search returns the first position at or after from, within [lo, hi) under v, whose node may
// hold r, or t.n.
func (t *roomTree) search(v, lo, hi, from int, r Requests) int {
	if hi <= from || lo >= t.n || !t.most[v].holds(r) {
		return t.n
	}
	if hi-lo == 1 {
		return lo
	}
	mid := (lo + hi) / 2
	if i := t.search(2*v, lo, mid, from, r); i < t.n {
		return i
	}
	return t.search(2*v+1, mid, hi, from, r)
}

// NextWithRoom returns the position, in NodeInfos().List(), of the first node at or after from
// that a pod asking for r is not surely refused on for room: the first for which NoRoom, with a
// profile that filters resources, answers false. It returns the number of nodes when there is
// none. Callers walking the list in order jump from one such node to the next instead of testing
// each.
func (s *Snapshot) NextWithRoom(r Requests, from int) int {
	if s.room == nil {
		s.room = newRoomTree(s.sorted)
	}
	s.room.refresh(s.sorted)
	return s.room.search(1, 0, s.room.size, from, r)
}

// nodeList is the nodes for which keep holds, in sorted order, kept up to date.
type nodeList struct {
	keep    func(fwk.NodeInfo) bool
	in      []bool
	out     []fwk.NodeInfo
	changed changed
}

func newNodeList(nodes []fwk.NodeInfo, keep func(fwk.NodeInfo) bool) *nodeList {
	l := &nodeList{keep: keep, in: make([]bool, len(nodes)), changed: newChanged(len(nodes))}
	for i, ni := range nodes {
		l.in[i] = keep(ni)
	}
	l.collect(nodes)
	return l
}

func (l *nodeList) collect(nodes []fwk.NodeInfo) {
	l.out = nil
	for i, ni := range nodes {
		if l.in[i] {
			l.out = append(l.out, ni)
		}
	}
}

// list returns the nodes for which keep holds now. The slice is shared: callers must not change
// it (append to a clipped copy).
func (l *nodeList) list(nodes []fwk.NodeInfo) []fwk.NodeInfo {
	moved := false
	l.changed.drain(func(i int) {
		if now := l.keep(nodes[i]); now != l.in[i] {
			l.in[i], moved = now, true
		}
	})
	if moved {
		l.collect(nodes)
	}
	return l.out
}

func hasAffinity(ni fwk.NodeInfo) bool { return len(ni.GetPodsWithAffinity()) > 0 }

func hasRequiredAntiAffinity(ni fwk.NodeInfo) bool {
	return len(ni.GetPodsWithRequiredAntiAffinity()) > 0
}

// touched marks the node at position i as changed for every index built so far.
func (s *Snapshot) touched(i int) {
	if s.room != nil {
		s.room.changed.mark(i)
	}
	for _, l := range []*nodeList{s.affinity, s.antiAffinity} {
		if l != nil {
			l.changed.mark(i)
		}
	}
}
