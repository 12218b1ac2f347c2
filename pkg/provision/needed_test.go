package provision

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// Pods that fit the nodes there are are not planned until one pod is known to need capacity;
// from then on, for NeedWindow, every pending pod is, as a burst's later pods need.
func TestPlansStartWithAPodThatNeedsCapacityAndGoOnForAWhile(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := New(Options{Clock: clk})
	if p.capacityNeeded(false) {
		t.Fatal("planned before any pod was known to need capacity")
	}
	if !p.capacityNeeded(true) {
		t.Fatal("not planned when a pod needs capacity")
	}
	clk.Step(NeedWindow - time.Second)
	if !p.capacityNeeded(false) {
		t.Errorf("not planned %s after a pod needed capacity", NeedWindow-time.Second)
	}
	clk.Step(2 * time.Second)
	if p.capacityNeeded(false) {
		t.Errorf("still planned %s after a pod last needed capacity", NeedWindow+time.Second)
	}
}
