package provision

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestClaimsWithRoomFillFirst plans Karpenter's mix, where hostname spread and anti-affinity
// keep one pod of each class per claim: the pods without such constraints must fill those claims
// before the first claims grow, so the plan's price stays near the LP bound (first fit over the
// claims in the order they opened priced it at 1.23 × the bound; room first at 1.12; with the kin order but no room, 1.32), and the
// generic workload, which packs into a few big claims, keeps its 1.00.
func TestClaimsWithRoomFillFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		classes  []string
		atMost   float64
		atLeastN int
	}{
		{"Karpenter's five classes", benchClasses, 1.15, 100},
		{"generic", []string{classGeneric}, 1.005, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := testPlanner(t)
			pool := newPool("default")
			pool.InstanceTypes = karpenterCatalog()
			plan := pl.Plan(context.Background(), Input{Pending: benchPods(500, tc.classes...), Pools: []Pool{pool}})
			if len(plan.Unplaceable) > 0 {
				t.Fatalf("%d pods unplaced, first: %s: %v", len(plan.Unplaceable), plan.Unplaceable[0].Pod.Name, plan.Unplaceable[0].Reasons)
			}
			var price float64
			var placed []*corev1.Pod
			for _, c := range plan.Claims {
				price += c.Options[0].Offering.PricePerHour
				placed = append(placed, c.Pods...)
			}
			if len(placed) != 500 {
				t.Fatalf("the claims hold %d pods, want 500", len(placed))
			}
			if len(plan.Claims) < tc.atLeastN {
				t.Errorf("%d claims, want at least %d (one per hostname-bound pod)", len(plan.Claims), tc.atLeastN)
			}
			bound, err := LowerBound(placed, karpenterCatalog())
			if err != nil {
				t.Fatal(err)
			}
			if got := price / bound; got > tc.atMost {
				t.Errorf("price %.2f is %.3f × the LP bound %.2f, want at most %.3f", price, got, bound, tc.atMost)
			}
		})
	}
}
