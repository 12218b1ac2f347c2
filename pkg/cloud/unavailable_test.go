package cloud

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestUnavailableOfferingsExpireAfterTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	u := NewUnavailableOfferings(clk)
	short := OfferingKey{InstanceType: "m6i.large", Zone: "us-west-2a", CapacityType: "spot"}
	other := OfferingKey{InstanceType: "m6i.large", Zone: "us-west-2b", CapacityType: "spot"}
	u.Mark(short)
	for _, step := range []struct {
		after time.Duration
		want  bool
	}{{0, true}, {UnavailableTTL - time.Second, true}, {UnavailableTTL, false}} {
		clk.SetTime(time.Unix(0, 0).Add(step.after))
		if got := u.Has(short); got != step.want {
			t.Errorf("after %v: Has = %v, want %v", step.after, got, step.want)
		}
	}
	if u.Has(other) {
		t.Error("an offering never marked is unavailable")
	}
	u.Mark(other)
	u.Clear()
	if u.Has(other) {
		t.Error("Clear kept a mark")
	}
}

func TestUnavailableOfferingsVersionChangesWithTheAnswers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	u := NewUnavailableOfferings(clk)
	key := OfferingKey{InstanceType: "m6i.large", Zone: "us-west-2a", CapacityType: "spot"}
	v0 := u.Version()
	u.Mark()
	if u.Version() != v0 {
		t.Fatal("Version changed with nothing marked")
	}
	u.Mark(key)
	v1 := u.Version()
	if v1 == v0 {
		t.Fatal("Version did not change with a mark")
	}
	clk.Step(UnavailableTTL - time.Second)
	if u.Version() != v1 {
		t.Fatal("Version changed while the mark held")
	}
	clk.Step(time.Second)
	v2 := u.Version()
	if v2 == v1 || u.Has(key) {
		t.Fatalf("the mark lapsed: Version %d → %d, Has %v", v1, v2, u.Has(key))
	}
	u.Clear()
	if u.Version() == v2 {
		t.Fatal("Version did not change with a clear")
	}
}
