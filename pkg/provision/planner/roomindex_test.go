package planner

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// scanOrder is order as a scan of every claim: the claims with room in opening order, then the
// others sorted by growth. The indexes must yield what it yields.
func scanOrder(open []*openClaim, pass fillPass, asks simulation.Requests, kind kindID, shy bool, rejecting map[*openClaim]bool) []int {
	var roomy []int
	var growths []growth
	for i, oc := range open {
		room := oc.spare()
		fits := room.pods > 0 && asks.MilliCPU <= room.milliCPU && asks.Memory <= room.memory
		if fits != pass.roomy || shy && oc.holding(kind) != pass.kin || rejecting[oc] {
			continue
		}
		if fits {
			roomy = append(roomy, i)
			continue
		}
		cost, base := oc.growth(room, asks)
		growths = append(growths, growth{rank: oc.pool.Rank, cost: cost, base: base, i: i})
	}
	if pass.roomy {
		return roomy
	}
	slices.SortFunc(growths, growth.Compare)
	out := make([]int, 0, len(growths))
	for _, g := range growths {
		out = append(out, g.i)
	}
	return out
}

// Claims open and take pods at random, and pods of random sizes, kinds and passes ask for the
// claims to weigh: the indexes yield the claims the scan does, in its order, however many sizes
// of pod come and go (more than roomindex keeps orders for, so orders are dropped and built again), and
// whether a pass's side of a kind is read from its bits or not.
func TestClaimIndexesYieldWhatAScanYields(t *testing.T) {
	pool := newPool("default")
	pool.InstanceTypes = karpenterCatalog()
	ps := nodepool.NewState(pool)
	alive := make([]int, len(ps.Compatible))
	for i := range alive {
		alive[i] = i
	}
	slices.SortStableFunc(alive, func(a, b int) int {
		return cmp.Compare(ps.Compatible[a].Offering.PricePerHour, ps.Compatible[b].Offering.PricePerHour)
	})
	cpus := []string{"100m", "250m", "500m", "1", "1500m", "3", "7"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "9Gi"}
	rng := rand.New(rand.NewPCG(35, 2))
	var r claimRooms
	var open []*openClaim
	fewSides := 0
	for step := range 6000 {
		pod := newPod(fmt.Sprintf("p%d", step), cpus[rng.IntN(len(cpus))], mems[rng.IntN(len(mems))])
		asks := simulation.Requests{MilliCPU: pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(),
			Memory: pod.Spec.Containers[0].Resources.Requests.Memory().Value()}
		kind := kindID(rng.IntN(3))
		switch {
		case len(open) == 0 || rng.IntN(20) == 0:
			oc := newOpenClaim(fmt.Sprintf("c%d", len(open)), ps, nil, alive)
			oc.info.AddPod(pod)
			r.holds(oc, len(open), kind)
			open = append(open, oc)
			r.opened()
		case rng.IntN(10) < 7:
			i := rng.IntN(len(open))
			open[i].info.AddPod(pod)
			r.holds(open[i], i, kind)
			r.changed(i)
		}
		pass, shy := fillPasses[rng.IntN(2)], rng.IntN(2) == 0
		if shy {
			pass = shyPasses[rng.IntN(4)]
		}
		rejecting := map[*openClaim]bool{}
		for range rng.IntN(3) {
			rejecting[open[rng.IntN(len(open))]] = true
		}
		if _, few := r.side(open, kind, pass.kin); shy && few {
			fewSides++
		}
		want := scanOrder(open, pass, asks, kind, shy, rejecting)
		got := slices.Collect(r.order(open, pass, asks, kind, shy, rejecting, byDomain{}))
		if !slices.Equal(got, want) {
			t.Fatalf("step %d, %d claims, pass %+v, asks %+v: the indexes yield %v, the scan %v", step, len(open), pass, asks, got, want)
		}
	}
	if fewSides < 100 || fewSides > 2900 {
		t.Errorf("a pass read its side of a kind from the bits %d times in 6,000 asks: both ways are not tried", fewSides)
	}
	if len(open) < 200 {
		t.Fatalf("only %d claims opened: the tree never grew past its first size", len(open))
	}
}
