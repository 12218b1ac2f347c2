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
