package bound

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// boundType is an instance type with the given allocatable (no overhead) and one available
// on-demand offering per price.
func boundType(name, cpu, mem string, prices ...float64) *cloud.InstanceType {
	it := &cloud.InstanceType{
		Name: name,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	}
	for i, p := range prices {
		it.Offerings = append(it.Offerings, cloud.Offering{Zone: fmt.Sprintf("zone-%d", i), CapacityType: karpv1.CapacityTypeOnDemand, PricePerHour: p, Available: true})
	}
	return it
}

func withOverhead(it *cloud.InstanceType, cpu, mem string) *cloud.InstanceType {
	it.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return it
}

func unavailable(it *cloud.InstanceType, price float64) *cloud.InstanceType {
	it.Offerings = append(it.Offerings, cloud.Offering{Zone: "zone-x", CapacityType: karpv1.CapacityTypeSpot, PricePerHour: price, Available: false})
	return it
}

func TestLowerBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pods  []*corev1.Pod
		types []*cloud.InstanceType
		want  float64
		err   string
	}{{
		name:  "no pods cost nothing",
		types: []*cloud.InstanceType{boundType("a", "4", "8Gi", 0.4)},
		want:  0,
	}, {
		name:  "cpu binds: half of a node",
		pods:  pods(2, "1", "512Mi"),
		types: []*cloud.InstanceType{boundType("a", "4", "8Gi", 0.4)},
		want:  0.2, // 2/4 of the cpu, 1/8 of the memory
	}, {
		name:  "memory binds: three quarters of a node",
		pods:  pods(2, "500m", "3Gi"),
		types: []*cloud.InstanceType{boundType("a", "4", "8Gi", 0.4)},
		want:  0.3, // 1/4 of the cpu, 6/8 of the memory
	}, {
		// A alone needs 16/4 = 4 nodes ($4), B alone 8/1 = 8 nodes ($8). Together, with x of A
		// and y of B: 4x + y = 8 and 4x + 8y = 16 give y = 8/7, x = 12/7, $20/7.
		name:  "mixing a cpu-heavy and a memory-heavy type beats either alone",
		pods:  pods(8, "1", "2Gi"),
		types: []*cloud.InstanceType{boundType("cpu-heavy", "4", "4Gi", 1), boundType("mem-heavy", "1", "8Gi", 1)},
		want:  20.0 / 7,
	}, {
		// Balanced alone: 2 nodes, $1.8. A and B: 4x + y = 4, x + 4y = 4 give x = y = 0.8, $1.6.
		// A or B alone: $4. A with balanced, or B with balanced: the mix has no A (or B): $1.8.
		name: "the best pair need not contain the best single type",
		pods: pods(4, "1", "1Gi"),
		types: []*cloud.InstanceType{
			boundType("balanced", "2", "2Gi", 0.9),
			boundType("cpu-heavy", "4", "1Gi", 1),
			boundType("mem-heavy", "1", "4Gi", 1),
		},
		want: 1.6,
	}, {
		name:  "proportional types: the cheaper per unit wins",
		pods:  pods(4, "1", "1Gi"),
		types: []*cloud.InstanceType{boundType("small", "2", "2Gi", 1), boundType("large", "4", "4Gi", 1.5)},
		want:  1.5,
	}, {
		name:  "the cheapest available offering prices the type; unavailable ones do not count",
		pods:  pods(4, "1", "1Gi"),
		types: []*cloud.InstanceType{unavailable(boundType("a", "4", "8Gi", 3, 2), 0.5)},
		want:  2,
	}, {
		name:  "allocatable, not capacity",
		pods:  pods(3, "1", "1Gi"),
		types: []*cloud.InstanceType{withOverhead(boundType("a", "4", "8Gi", 1), "1", "0")},
		want:  1, // 3 of 3 allocatable cores; capacity would say 0.75
	}, {
		name:  "a pod that asks only for memory",
		pods:  []*corev1.Pod{newPod("m", "0", "6Gi")},
		types: []*cloud.InstanceType{boundType("a", "4", "8Gi", 0.4)},
		want:  0.3,
	}, {
		name:  "a type with no memory is mixed with one that has it",
		pods:  pods(2, "2", "2Gi"),
		types: []*cloud.InstanceType{boundType("cpu-only", "4", "0", 0.1), boundType("mem-heavy", "1", "4Gi", 1)},
		// y = 4/4 = 1 mem-heavy (1 cpu), x = 3/4 cpu-only: $1.075.
		want: 1.075,
	}, {
		// The relaxation alone covers the cpu with the tiny type ($0.431); no pod fits on it, so
		// the pods' 4 cores and 8Gi need one large node.
		name:  "a type no pod fits on does not lower the bound",
		pods:  pods(4, "1", "2Gi"),
		types: []*cloud.InstanceType{boundType("tiny", "1", "512Mi", 0.001), boundType("large", "4", "16Gi", 1)},
		want:  1,
	}, {
		// The small pods may use the tiny type; the 2Gi pods may not: they alone need 2 cores and
		// 4Gi of the large type, half a node.
		name:  "each pod size is held to the types it fits",
		pods:  append(pods(2, "1", "2Gi"), newPod("small", "500m", "256Mi")),
		types: []*cloud.InstanceType{boundType("tiny", "1", "512Mi", 0.001), boundType("large", "4", "16Gi", 1)},
		want:  0.5,
	}, {
		name:  "nothing available",
		pods:  pods(1, "1", "1Gi"),
		types: []*cloud.InstanceType{unavailable(boundType("a", "4", "8Gi"), 0.1)},
		err:   "no mix of the 0 available instance types covers cpu 1 and memory 1Gi",
	}, {
		name:  "no type has memory",
		pods:  pods(1, "1", "1Gi"),
		types: []*cloud.InstanceType{boundType("cpu-only", "4", "0", 0.1)},
		err:   "no mix of the 1 available instance types covers",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LowerBound(tc.pods, tc.types)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("LowerBound = %v, %v; want error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("LowerBound: %v", err)
			}
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("LowerBound = %.12g, want %.12g", got, tc.want)
			}
		})
	}
}

// The primal enumeration in LowerBoundOf agrees with the dual LP solved independently: maximise
// a·CPU + b·MEM subject to a·cpu_o + b·mem_o ≤ price_o and a, b ≥ 0, whose optimum lies on a
// vertex of that polygon (the origin, an axis intercept, or where two offerings' lines cross).
func TestLowerBoundMatchesDual(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		var types []*cloud.InstanceType
		for i := range 1 + rng.IntN(8) {
			cpu := 1 + rng.IntN(64)
			mem := 1 + rng.IntN(256)
			types = append(types, boundType(fmt.Sprintf("t%d", i), fmt.Sprint(cpu), fmt.Sprintf("%dGi", mem), 0.01+rng.Float64()))
		}
		ps := pods(1+rng.IntN(50), fmt.Sprintf("%dm", 1+rng.IntN(4000)), fmt.Sprintf("%dMi", 1+rng.IntN(16384)))
		cpu, mem := sums(ps)
		got, err := LowerBoundOf(cpu, mem, types)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		want := dualOptimum(ps, types)
		if math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("trial %d: LowerBound = %.12g, dual optimum = %.12g", trial, got, want)
		}
	}
}

// On the simulated catalog the bound is below what the cheapest type that holds everything costs,
// and above what the cheapest cpu alone costs.
func TestLowerBoundFakeCatalog(t *testing.T) {
	ps := pods(10, "1", "1Gi")
	got, err := LowerBound(ps, fake.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	whole := cheapestHolding(ps)
	if got <= 0 || got > whole {
		t.Errorf("LowerBound = %g, want in (0, %g]", got, whole)
	}
}

func sums(ps []*corev1.Pod) (cpu, mem float64) {
	for _, p := range ps {
		cpu += float64(p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()) / 1e3
		mem += float64(p.Spec.Containers[0].Resources.Requests.Memory().Value()) / gib
	}
	return cpu, mem
}

func dualOptimum(ps []*corev1.Pod, types []*cloud.InstanceType) float64 {
	cpu, mem := sums(ps)
	type line struct{ c, m, p float64 } // c·a + m·b ≤ p
	var lines []line
	for _, it := range types {
		o, ok := it.CheapestOffering(nil)
		if !ok {
			continue
		}
		alloc := it.Allocatable()
		lines = append(lines, line{float64(alloc.Cpu().MilliValue()) / 1e3, float64(alloc.Memory().Value()) / gib, o.PricePerHour})
	}
	vertices := [][2]float64{{0, 0}}
	for _, l := range lines {
		vertices = append(vertices, [2]float64{l.p / l.c, 0}, [2]float64{0, l.p / l.m})
	}
	for i, l := range lines {
		for _, k := range lines[i+1:] {
			det := l.c*k.m - k.c*l.m
			if det != 0 {
				vertices = append(vertices, [2]float64{(l.p*k.m - k.p*l.m) / det, (l.c*k.p - k.c*l.p) / det})
			}
		}
	}
	best := 0.0
	for _, v := range vertices {
		a, b := v[0], v[1]
		feasible := a >= -1e-12 && b >= -1e-12
		for _, l := range lines {
			if l.c*a+l.m*b > l.p*(1+1e-9) {
				feasible = false
			}
		}
		if feasible {
			best = math.Max(best, a*cpu+b*mem)
		}
	}
	return best
}

func newPod(name, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
	}
}

func pods(n int, cpu, mem string) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("p%03d", i), cpu, mem)
	}
	return out
}

// cheapestHolding is the lowest price of an available offering of the simulated catalog whose
// allocatable holds all of ps at once, from the catalog's numbers alone.
func cheapestHolding(ps []*corev1.Pod) float64 {
	sum := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(len(ps)), resource.DecimalSI)}
	for _, p := range ps {
		sum = scheduling.Add(sum, scheduling.PodRequests(p))
	}
	cheapest := math.Inf(1)
	for _, it := range fake.Catalog() {
		if !scheduling.Fits(sum, it.Allocatable()) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available {
				cheapest = math.Min(cheapest, o.PricePerHour)
			}
		}
	}
	return cheapest
}

// The bound stays a floor: on random catalogs and pods of random sizes it is never above a plan
// that exists, each pod size packed first-fit on the cheapest type that holds it. The plain
// relaxation is below it or equal.
func TestLowerBoundBelowAPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		var types []*cloud.InstanceType
		for i := range 1 + rng.IntN(8) {
			types = append(types, boundType(fmt.Sprintf("t%d", i), fmt.Sprint(1+rng.IntN(32)), fmt.Sprintf("%dGi", 1+rng.IntN(128)), 0.001+rng.Float64()))
		}
		var ps []*corev1.Pod
		for range 1 + rng.IntN(4) {
			ps = append(ps, pods(1+rng.IntN(20), fmt.Sprintf("%dm", 100+rng.IntN(4000)), fmt.Sprintf("%dMi", 64+rng.IntN(8192)))...)
		}
		plan, ok := firstFitPlan(ps, types)
		if !ok {
			continue
		}
		got, err := LowerBound(ps, types)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		cpu, mem := sums(ps)
		plain, err := LowerBoundOf(cpu, mem, types)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if got > plan*(1+1e-9) || got < plain*(1-1e-9) {
			t.Fatalf("trial %d: LowerBound = %.6g, want between the relaxation %.6g and a plan's price %.6g", trial, got, plain, plan)
		}
	}
}

// firstFitPlan prices a plan for ps: the pods of each size, in turn, first-fit onto nodes of the
// cheapest type that holds one of them (a node holds pods of one size only). ok is false when
// some pod fits no type.
func firstFitPlan(ps []*corev1.Pod, types []*cloud.InstanceType) (price float64, ok bool) {
	bySize := map[[2]int64][]*corev1.Pod{}
	for _, p := range ps {
		r := scheduling.PodRequests(p)
		k := [2]int64{r.Cpu().MilliValue(), r.Memory().Value()}
		bySize[k] = append(bySize[k], p)
	}
	for k, group := range bySize {
		best := math.Inf(1)
		for _, it := range types {
			o, found := it.CheapestOffering(nil)
			alloc := it.Allocatable()
			if !found || alloc.Cpu().MilliValue() < k[0] || alloc.Memory().Value() < k[1] {
				continue
			}
			perNode := min(alloc.Cpu().MilliValue()/max(k[0], 1), alloc.Memory().Value()/max(k[1], 1))
			nodes := (int64(len(group)) + perNode - 1) / perNode
			best = math.Min(best, float64(nodes)*o.PricePerHour)
		}
		if math.IsInf(best, 1) {
			return 0, false
		}
		price += best
	}
	return price, true
}
