package fake

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// The planner keeps what it worked out for a pool while the pool's instance types are the same
// objects; InstanceTypes must hand out the same ones until a launch's shortage changes them, and
// new ones then, leaving those it gave before as they were.
func TestInstanceTypesAreSharedUntilAShortageChangesThem(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	p := New(Options{Clock: clk, ClusterName: "test"})
	availability := func(types []*cloud.InstanceType, name string) (available, all int) {
		for _, it := range types {
			if it.Name != name {
				continue
			}
			for _, o := range it.Offerings {
				all++
				if o.Available {
					available++
				}
			}
		}
		return available, all
	}
	first, _ := p.InstanceTypes(ctx, nil)
	if _, err := p.Create(ctx, newClaim("fits", nil)); err != nil {
		t.Fatal(err)
	}
	again, _ := p.InstanceTypes(ctx, nil)
	if len(first) == 0 || len(first) != len(again) || first[0] != again[0] {
		t.Fatalf("two calls with a launch that found no shortage between them gave different types")
	}

	var t4g []cloud.OfferingKey
	for _, z := range Zones() {
		for _, ct := range []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot} {
			t4g = append(t4g, cloud.OfferingKey{InstanceType: "t4g.large", Zone: z, CapacityType: ct})
		}
	}
	p.InjectInsufficientCapacity(t4g...)
	if _, err := p.Create(ctx, newClaim("pinned", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "t4g.large"))); err == nil {
		t.Fatal("a launch into offerings out of capacity succeeded")
	}
	short, _ := p.InstanceTypes(ctx, nil)
	if short[0] == first[0] {
		t.Fatal("the types after a shortage are the ones from before it")
	}
	if got, all := availability(short, "t4g.large"); got != 0 || all != len(t4g) {
		t.Errorf("after the shortage t4g.large has %d of %d offerings available, want 0 of %d", got, all, len(t4g))
	}
	if got, all := availability(first, "t4g.large"); got != all {
		t.Errorf("the types handed out before the shortage changed: %d of %d offerings available", got, all)
	}
	if again, _ := p.InstanceTypes(ctx, nil); again[0] != short[0] {
		t.Error("two calls during the shortage gave different types")
	}

	clk.Step(cloud.UnavailableTTL)
	recovered, _ := p.InstanceTypes(ctx, nil)
	if got, all := availability(recovered, "t4g.large"); got != all || recovered[0] == short[0] {
		t.Errorf("once the shortage lapsed: %d of %d t4g.large offerings available, new types: %v", got, all, recovered[0] != short[0])
	}
}
