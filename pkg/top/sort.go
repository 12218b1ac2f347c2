package top

import (
	"fmt"
	"sort"
)

// SortKey orders the node list.
type SortKey string

// The orders `tailor top --sort` and the `s` key offer. Sizes and prices sort largest first,
// the way one looks for the nodes that matter; names and pools alphabetically.
const (
	SortNodePool SortKey = "nodepool"
	SortName     SortKey = "name"
	SortPrice    SortKey = "price"
	SortCPU      SortKey = "cpu"
	SortMemory   SortKey = "memory"
	SortPods     SortKey = "pods"
	SortAge      SortKey = "age"
)

// SortKeys are every order, in the order the `s` key cycles through them.
var SortKeys = []SortKey{SortNodePool, SortName, SortPrice, SortCPU, SortMemory, SortPods, SortAge}

// ParseSortKey checks a --sort value.
func ParseSortKey(s string) (SortKey, error) {
	for _, k := range SortKeys {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("--sort=%q: one of %v", s, SortKeys)
}

// Next is the order after k, for the `s` key.
func (k SortKey) Next() SortKey {
	if k == "" {
		k = SortNodePool // the zero order is the default one
	}
	for i, have := range SortKeys {
		if have == k {
			return SortKeys[(i+1)%len(SortKeys)]
		}
	}
	return SortKeys[0]
}

func sortNodes(nodes []Node, k SortKey) {
	less := func(a, b *Node) bool { return a.NodePool < b.NodePool || a.NodePool == b.NodePool && a.Name < b.Name }
	switch k {
	case SortName:
		less = func(a, b *Node) bool { return a.Name < b.Name }
	case SortPrice:
		less = func(a, b *Node) bool { return a.PricePerHour > b.PricePerHour }
	case SortCPU:
		less = func(a, b *Node) bool {
			return share(a.Usage.CPURequestedMilli, a.Usage.CPUAllocatableMilli) > share(b.Usage.CPURequestedMilli, b.Usage.CPUAllocatableMilli)
		}
	case SortMemory:
		less = func(a, b *Node) bool {
			return share(a.Usage.MemoryRequested, a.Usage.MemoryAllocatable) > share(b.Usage.MemoryRequested, b.Usage.MemoryAllocatable)
		}
	case SortPods:
		less = func(a, b *Node) bool { return a.Pods > b.Pods }
	case SortAge:
		less = func(a, b *Node) bool { return a.Created.Before(b.Created) }
	}
	// Stable on a name order, so equal keys keep a fixed order between refreshes.
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	sort.SliceStable(nodes, func(i, j int) bool { return less(&nodes[i], &nodes[j]) })
}

func share(used, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return float64(used) / float64(of)
}
