package planner

import corev1 "k8s.io/api/core/v1"

// poolCatalog is the part of a pool's plan state that depends on the NodePool and its instance
// types alone: the offerings its requirements allow, with the labels their nodes would carry,
// cheapest first, and their types. Working it out labels every offering of the catalog, which a
// caller that plans many times with the same pools (a disruption pass: one plan per candidate)
// need not repeat.
type poolCatalog struct {
	reqs       []corev1.NodeSelectorRequirement
	free       []freeKey
	compatible []*candidate
	types      []*typeInfo
	bySize     []int
	varying    []string
}

// PreparePools returns the pools with their offerings (and the label keys on which they differ)
// worked out once, for callers that plan
// many times with the same pools. The pools' NodePools and instance types must not change while
// the prepared pools are used; their Used may differ from plan to plan.
func PreparePools(pools []Pool) []Pool {
	out := make([]Pool, len(pools))
	for i, p := range pools {
		p.prepared = nil
		ps := newPoolState(p)
		p.prepared = &poolCatalog{reqs: ps.reqs, free: ps.free, compatible: ps.compatible, types: ps.types, bySize: ps.bySize,
			varying: ps.varyingKeys()}
		out[i] = p
	}
	return out
}

// state is a fresh plan state over the catalog: the catalog's read-only parts are shared, and
// each offering gets a candidate of its own, since a plan notes on it which daemons it runs.
func (pc *poolCatalog) state(p Pool) *poolState {
	ps := &poolState{Pool: p, reqs: pc.reqs, free: pc.free, types: pc.types, bySize: pc.bySize, varying: pc.varying}
	cands := make([]candidate, len(pc.compatible))
	ps.compatible = make([]*candidate, len(pc.compatible))
	for i, c := range pc.compatible {
		cands[i] = candidate{pool: ps, it: c.it, offering: c.offering, labels: c.labels, allocatable: c.allocatable, typ: c.typ, index: c.index}
		ps.compatible[i] = &cands[i]
	}
	return ps
}
