package repair

import (
	"testing"
	"time"
)

// A repair that stays blocked is looked at every Recheck, but says so once every 15 minutes per
// node, as Karpenter's NodeRepairBlocked.
func TestBlockedIsSaidOncePerPeriod(t *testing.T) {
	c := &Controller{blockedSaid: map[string]time.Time{}}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	if !c.sayBlocked("a", t0) || !c.sayBlocked("b", t0) {
		t.Fatal("the first look at a blocked node does not say so")
	}
	for at := t0.Add(Recheck); at.Before(t0.Add(blockedEvery)); at = at.Add(Recheck) {
		if c.sayBlocked("a", at) {
			t.Fatalf("said again after %s", at.Sub(t0))
		}
	}
	if !c.sayBlocked("a", t0.Add(blockedEvery)) {
		t.Error("not said again after 15 minutes")
	}
}
