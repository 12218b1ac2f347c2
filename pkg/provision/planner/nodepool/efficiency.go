package nodepool

import (
	"sort"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Efficiency is what an offering costs per share of the batch it could hold, counting cpu and
// memory in the proportion the batch asks for them. A claim grows while one of its offerings
// holds its pods, so one that may grow into the biggest type of a family dear for this batch (a
// memory-optimised type for pods that ask for little memory) packs full nodes of that family.
// Claims are thrifty: they grow only within the offerings within efficiencySlack of the most
// efficient. Sizes of one family cost alike per unit, so the last claim still launches small.
const efficiencySlack = 0.05

// minEfficientTypes is how many instance types the efficient offerings span at least.
const minEfficientTypes = 10

// thriftyNodes is how many of the biggest efficient nodes a batch must fill for claims to be
// thrifty.
const thriftyNodes = 4

// RateEfficiency marks the pool's offerings that are efficient for a batch asking for cpu
// millicores and mem bytes in all, and at most maxCPU and maxMem for one pod. An offering too small
// for the biggest pods is not rated: claims would stay too small to take them beside others.
func (ps *State) RateEfficiency(cpu, mem, maxCPU, maxMem float64) {
	ps.Efficient = make([]bool, len(ps.Compatible))
	eff, shares := make([]float64, len(ps.Compatible)), make([]float64, len(ps.Compatible))
	best := -1.0
	for i, c := range ps.Compatible {
		// An offering's allocatable is its type's (allocatableOf, per type).
		t := ps.Types[c.Typ]
		if t.cpu*1000 < maxCPU || t.memory < maxMem {
			eff[i] = -1
			continue
		}
		share := -1.0
		if cpu > 0 {
			share = t.cpu * 1000 / cpu
		}
		if mem > 0 {
			if m := t.memory / mem; share < 0 || m < share {
				share = m
			}
		}
		if share <= 0 {
			eff[i] = -1
			continue
		}
		shares[i] = share
		// An offering that holds the whole batch costs its price, however much room it has left:
		// for a small batch the cheapest offering that holds it is the efficient one.
		share = min(share, 1)
		eff[i] = c.Offering.PricePerHour / share
		if best < 0 || eff[i] < best {
			best = eff[i]
			ps.Ratio = t.memory / (t.cpu * 1000)
		}
	}
	if best < 0 {
		ps.Efficient = nil
		return
	}
	// Widen the slack until the claims can fall back on enough instance types when the cloud is
	// short of the cheapest: a claim that may launch as one type only is one ICE away from a replan.
	limit := best * (1 + efficiencySlack)
	order := make([]int, 0, len(ps.Compatible))
	for i := range ps.Compatible {
		if eff[i] >= 0 {
			order = append(order, i)
		}
	}
	sort.Slice(order, func(a, b int) bool { return eff[order[a]] < eff[order[b]] })
	types := map[*cloud.InstanceType]bool{}
	for _, i := range order {
		if eff[i] > limit && len(types) >= minEfficientTypes {
			break
		}
		types[ps.Compatible[i].It] = true
		if eff[i] > limit {
			limit = eff[i]
		}
	}
	biggest := 0.0
	for i := range ps.Compatible {
		ps.Efficient[i] = eff[i] >= 0 && eff[i] <= limit
		if ps.Efficient[i] {
			biggest = max(biggest, shares[i])
		}
	}
	// Thrift pays on batches of many nodes. A batch that a few efficient nodes hold is cheapest
	// on the one offering that holds most of it, and a thrifty claim would only leave a remainder
	// for a second node.
	if biggest*thriftyNodes > 1 {
		ps.Efficient, ps.Ratio = nil, 0
	}
}

// EfficientOf returns the efficient offerings among offerings (all of them when the batch gives
// no measure of efficiency).
func (ps *State) EfficientOf(offerings []int) []int {
	if ps.Efficient == nil {
		return offerings
	}
	out := make([]int, 0, len(offerings))
	for _, i := range offerings {
		if ps.Efficient[i] {
			out = append(out, i)
		}
	}
	return out
}
