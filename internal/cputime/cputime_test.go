package cputime

import "testing"

// The CPU time grows with work done, and never goes back.
func TestProcessGrowsWithWork(t *testing.T) {
	before := Process(t)
	sum := 0
	for i := range 50_000_000 {
		sum += i % 7
	}
	after := Process(t)
	if after <= before {
		t.Errorf("CPU time %v after a busy loop (sum %d), %v before: want it to grow", after, sum, before)
	}
}
