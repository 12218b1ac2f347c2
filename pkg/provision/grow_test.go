package provision

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestTheClaimThatGrowsForLeastTakesThePod: two pods that repel each other open a claim each,
// and a third pod fits the room of neither. Growing the first claim for it costs two sizes of
// Karpenter's catalog, growing the second one size: the pod joins the second. (First fit grew
// the first, to 1.8 an hour in all against 1.5.)
func TestTheClaimThatGrowsForLeastTakesThePod(t *testing.T) {
	cpuHeavy := classPod(classHostAnti, newPod("apart-cpu", "2", "512Mi"))
	memHeavy := classPod(classHostAnti, newPod("apart-mem", "1", "3584Mi"))
	for _, p := range []*corev1.Pod{cpuHeavy, memHeavy} {
		p.Labels = map[string]string{benchClassLabel: classHostAnti}
	}
	joiner := newPod("joiner", "2", "256Mi")
	pl := testPlanner(t)
	pool := newPool("default")
	pool.InstanceTypes = karpenterCatalog()
	plan := pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{joiner, cpuHeavy, memHeavy}, Pools: []Pool{pool}})
	if len(plan.Unplaceable) > 0 || len(plan.Claims) != 2 {
		t.Fatalf("want the three pods on two claims, got %s", summary(plan))
	}
	var price float64
	for _, c := range plan.Claims {
		price += c.Options[0].Offering.PricePerHour
		if hasPod(c, joiner) != hasPod(c, memHeavy) {
			t.Errorf("claim %s (%s) holds %v; want the joiner beside %s, whose claim grows one size for it",
				c.Options[0].InstanceType.Name, c.NodePool.Name, podNames(c.Pods), memHeavy.Name)
		}
	}
	if math.Abs(price-1.5) > 1e-9 {
		t.Errorf("the plan costs %.2f an hour, want 1.50 (sizes 2 and 3)", price)
	}
}

// TestCheapestFirstOrdersByCostThenOpening checks the order of the claims weighed for growth
// against a stable sort, across the scan-then-sort switch, with ties and +Inf among the costs.
func TestCheapestFirstOrdersByCostThenOpening(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 200 {
		n := rng.IntN(3 * selectedFirst)
		queue := make([]growth, n)
		for i := range queue {
			cost := float64(rng.IntN(4)) * 0.3
			if rng.IntN(6) == 0 {
				cost = math.Inf(1)
			}
			queue[i] = growth{cost: cost, i: i}
		}
		want := slices.Clone(queue)
		slices.SortStableFunc(want, func(a, b growth) int { return cmp.Compare(a.cost, b.cost) })
		var got []growth
		for g := range cheapestFirst(queue) {
			got = append(got, g)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: got %v, want %v", round, got, want)
		}
	}
}

func hasPod(c *PlannedClaim, pod *corev1.Pod) bool { return slices.Contains(c.Pods, pod) }

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
