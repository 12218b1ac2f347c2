package nodepool

import (
	"math/rand"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// rateBySorting is the rating as it was first written, kept as the reference: every offering's
// rating in a list, sorted, and walked from the best, widening the limit until the walk has seen
// minEfficientTypes types.
func rateBySorting(ps *State, cpu, mem, maxCPU, maxMem float64) (efficient []bool, ratio float64) {
	eff, shares := make([]float64, len(ps.Compatible)), make([]float64, len(ps.Compatible))
	best := -1.0
	for i, c := range ps.Compatible {
		eff[i] = -1
		share := shareOf(ps.Types[c.Typ], cpu, mem, maxCPU, maxMem)
		if share <= 0 {
			continue
		}
		shares[i], eff[i] = share, c.Offering.PricePerHour/min(share, 1)
		if best < 0 || eff[i] < best {
			best, ratio = eff[i], ps.Types[c.Typ].memory/(ps.Types[c.Typ].cpu*1000)
		}
	}
	if best < 0 {
		return nil, ratio
	}
	limit := best * (1 + efficiencySlack)
	var order []int
	for i := range ps.Compatible {
		if eff[i] >= 0 {
			order = append(order, i)
		}
	}
	sort.Slice(order, func(a, b int) bool { return eff[order[a]] < eff[order[b]] })
	types := map[int]bool{}
	for _, i := range order {
		if eff[i] > limit && len(types) >= minEfficientTypes {
			break
		}
		types[ps.Compatible[i].Typ] = true
		limit = max(limit, eff[i])
	}
	efficient = make([]bool, len(ps.Compatible))
	biggest := 0.0
	for i := range ps.Compatible {
		if efficient[i] = eff[i] >= 0 && eff[i] <= limit; efficient[i] {
			biggest = max(biggest, shares[i])
		}
	}
	if biggest*thriftyNodes > 1 {
		return nil, 0
	}
	return efficient, ratio
}

// TestRateEfficiencyAsSorted rates random batches, from one pod to thousands, small and big,
// cpu-heavy and memory-heavy, on the simulated catalog with and without spot and on a pool of
// a few types, and requires the rating that sorts nothing to mark the same offerings and the
// same ratio as the sorted walk.
func TestRateEfficiencyAsSorted(t *testing.T) {
	catalog := fake.Catalog()
	pool := func(name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) Pool {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		np.Spec.Template.Spec.Requirements = reqs
		return Pool{NodePool: np, InstanceTypes: catalog}
	}
	pools := []Pool{
		pool("any"),
		pool("on-demand", karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}),
		pool("few", karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge", "c5.2xlarge", "r5.4xlarge"}}),
	}
	rng := rand.New(rand.NewSource(35))
	compared, thrifty := 0, 0
	for _, p := range pools {
		ps := NewState(p)
		if len(ps.Compatible) == 0 {
			t.Fatalf("pool %s offers nothing", p.NodePool.Name)
		}
		for range 300 {
			// As a fresh plan state has them.
			ps.Efficient, ps.Ratio = nil, 0
			pods := 1 + rng.Intn(3000)
			if rng.Intn(3) == 0 {
				pods = 1 + rng.Intn(20)
			}
			maxCPU, maxMem := float64(100+rng.Intn(8000)), float64(1+rng.Intn(32))*(1<<28)
			cpu, mem := maxCPU*float64(pods)*rng.Float64(), maxMem*float64(pods)*rng.Float64()
			if rng.Intn(10) == 0 {
				mem = 0
			}
			want, ratio := rateBySorting(ps, cpu, mem, maxCPU, maxMem)
			ps.RateEfficiency(cpu, mem, maxCPU, maxMem)
			if !slices.Equal(ps.Efficient, want) || ps.Ratio != ratio {
				t.Fatalf("pool %s, %d pods (cpu %.0f, mem %.0f, at most %.0f and %.0f): efficient %v ratio %v; the sorted walk: %v ratio %v",
					p.NodePool.Name, pods, cpu, mem, maxCPU, maxMem, ps.Efficient, ps.Ratio, want, ratio)
			}
			compared++
			if want != nil {
				thrifty++
			}
		}
	}
	// The draw must reach both answers: thrifty claims, and none.
	if thrifty == 0 || thrifty == compared {
		t.Fatalf("%d of %d batches rated thrifty: the draw does not cover both cases", thrifty, compared)
	}
	t.Logf("%d batches compared, %d thrifty", compared, thrifty)
}
