package nodepool

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
//
// The efficient offerings are those within efficiencySlack of the best, the slack widened until
// they span minEfficientTypes types: up to the cheapest rating of the minEfficientTypes-th type,
// when types are ranked by their cheapest offering's rating (all rated offerings when fewer types
// are rated). A plan rates every offering of its pools, so this reads each offering once and
// sorts nothing: what the batch changes is each type's share, worked out per type.
func (ps *State) RateEfficiency(cpu, mem, maxCPU, maxMem float64) {
	// shares[t] is how much of the batch one node of type t holds, -1 when it is not rated;
	// cheapest[t] the best rating among its offerings, -1 when none is rated.
	shares, cheapest := make([]float64, len(ps.Types)), make([]float64, len(ps.Types))
	for t, ti := range ps.Types {
		shares[t], cheapest[t] = shareOf(ti, cpu, mem, maxCPU, maxMem), -1
	}
	best, worst := -1.0, -1.0
	for _, c := range ps.Compatible {
		share := shares[c.Typ]
		if share <= 0 {
			continue
		}
		// An offering that holds the whole batch costs its price, however much room it has left:
		// for a small batch the cheapest offering that holds it is the efficient one.
		eff := c.Offering.PricePerHour / min(share, 1)
		if best < 0 || eff < best {
			best = eff
			t := ps.Types[c.Typ]
			ps.Ratio = t.memory / (t.cpu * 1000)
		}
		worst = max(worst, eff)
		if cheapest[c.Typ] < 0 || eff < cheapest[c.Typ] {
			cheapest[c.Typ] = eff
		}
	}
	if best < 0 {
		ps.Efficient = nil
		return
	}
	// Widen the slack until the claims can fall back on enough instance types when the cloud is
	// short of the cheapest: a claim that may launch as one type only is one ICE away from a replan.
	limit := best * (1 + efficiencySlack)
	if nth, ok := nthSmallest(cheapest, minEfficientTypes); ok {
		limit = max(limit, nth)
	} else {
		limit = max(limit, worst)
	}
	ps.Efficient = make([]bool, len(ps.Compatible))
	biggest := 0.0
	for i, c := range ps.Compatible {
		share := shares[c.Typ]
		if share > 0 && c.Offering.PricePerHour/min(share, 1) <= limit {
			ps.Efficient[i] = true
			biggest = max(biggest, share)
		}
	}
	// Thrift pays on batches of many nodes. A batch that a few efficient nodes hold is cheapest
	// on the one offering that holds most of it, and a thrifty claim would only leave a remainder
	// for a second node.
	if biggest*thriftyNodes > 1 {
		ps.Efficient, ps.Ratio = nil, 0
	}
}

// shareOf is how much of a batch asking for cpu millicores and mem bytes (at most maxCPU and
// maxMem for one pod) one node of the type holds, in the scarcer of the two; -1 when the type is
// too small for the biggest pod or the batch asks for neither.
func shareOf(t *typeInfo, cpu, mem, maxCPU, maxMem float64) float64 {
	if t.cpu*1000 < maxCPU || t.memory < maxMem {
		return -1
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
		return -1
	}
	return share
}

// nthSmallest returns the n-th smallest of the values that are not negative, and false when
// fewer than n are.
func nthSmallest(values []float64, n int) (float64, bool) {
	// low holds the n smallest seen so far, in ascending order.
	low := make([]float64, 0, n)
	for _, v := range values {
		if v < 0 || (len(low) == n && v >= low[n-1]) {
			continue
		}
		if len(low) < n {
			low = append(low, v)
		} else {
			low[n-1] = v
		}
		for j := len(low) - 1; j > 0 && low[j] < low[j-1]; j-- {
			low[j], low[j-1] = low[j-1], low[j]
		}
	}
	if len(low) < n {
		return 0, false
	}
	return low[n-1], true
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
