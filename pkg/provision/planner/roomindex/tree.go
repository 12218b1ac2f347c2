package roomindex

import "github.com/tailor-sh/tailor/pkg/simulation"

// Tree is a segment tree over the claims in opening order: each leaf is a claim's cpu and memory
// room (-1 when it has no room for another pod), each inner node the largest of each below it. A
// subtree whose largest cpu or memory room is short of a pod's holds no claim with room for it
// (the two largest may be of different claims, so the converse does not hold, and the search
// goes down to the leaves to see). The zero Tree is empty.
type Tree struct {
	leaves   int
	cpu, mem []int64
}

// Set records claim i's room, growing the tree to hold it; a negative cpu and memory mark a claim
// with no room for another pod.
func (t *Tree) Set(i int, milliCPU, memory int64) {
	if i >= t.leaves {
		t.grow(i + 1)
	}
	n := t.leaves + i
	t.cpu[n], t.mem[n] = milliCPU, memory
	for n /= 2; n > 0; n /= 2 {
		t.cpu[n], t.mem[n] = max(t.cpu[2*n], t.cpu[2*n+1]), max(t.mem[2*n], t.mem[2*n+1])
	}
}

// grow doubles the leaves until there are at least n, keeping the rooms recorded.
func (t *Tree) grow(n int) {
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

// Next returns the first claim from from on whose room holds asks, or -1.
func (t *Tree) Next(from int, asks simulation.Requests) int {
	if from >= t.leaves {
		return -1
	}
	return t.find(1, 0, t.leaves, from, asks.MilliCPU, asks.Memory)
}

func (t *Tree) find(n, lo, hi, from int, cpu, mem int64) int {
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
