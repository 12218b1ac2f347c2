package nodepool

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// poolCatalog is the part of a pool's plan state that depends on the NodePool and its instance
// types alone: the offerings its requirements allow, with the labels their nodes would carry,
// cheapest first, and their types. Working it out labels every offering of the catalog, which a
// caller that plans many times with the same pools (a disruption pass: one plan per candidate)
// need not repeat.
type poolCatalog struct {
	reqs       []corev1.NodeSelectorRequirement
	free       []freeKey
	compatible []*Candidate
	types      []*typeInfo
	bySize     []int
	varying    []string
	// domainFirsts: see State.DomainFirsts; every: State.Every.
	domainFirsts, every []int
	byTypeName          map[string][]int
	// classes caches State.ClassesFor for every plan of the pass, under mu: the classes depend
	// on the offerings and the keys alone. Plans read the slices it holds and never write them.
	mu      sync.Mutex
	classes map[string][]int32
}

// Prepare returns the pools with their offerings (and the label keys on which they differ)
// worked out once, for callers that plan
// many times with the same pools. The pools' NodePools and instance types must not change while
// the prepared pools are used; their Used may differ from plan to plan.
func Prepare(pools []Pool) []Pool {
	out := make([]Pool, len(pools))
	for i, p := range pools {
		p.prepared = nil
		ps := NewState(p)
		p.prepared = &poolCatalog{reqs: ps.reqs, free: ps.Free, compatible: ps.Compatible, types: ps.Types, bySize: ps.bySize,
			varying: ps.VaryingKeys(), domainFirsts: ps.DomainFirsts(), every: ps.Every(), byTypeName: ps.ByTypeName()}
		out[i] = p
	}
	return out
}

// state is a fresh plan state over the catalog. The catalog's parts, the candidates included, are
// shared read-only: a plan costs nothing per offering to set up (copying the candidates was a
// fifth of what a disruption pass allocated), and what it notes per offering (the daemons each
// runs) it keeps in its own daemons.Set.
func (pc *poolCatalog) state(p Pool) *State {
	return &State{Pool: p, reqs: pc.reqs, Free: pc.free, Compatible: pc.compatible, Types: pc.types, bySize: pc.bySize,
		varying: pc.varying, domainFirsts: pc.domainFirsts, every: pc.every, byTypeName: pc.byTypeName}
}
