package provision

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBatcherClosesOnIdleAndMax(t *testing.T) {
	cases := []struct {
		name string
		// triggers are the offsets, from the first trigger, at which more pods arrive.
		triggers []time.Duration
		// closeAt is when the batch must be closed, counted from the first trigger.
		closeAt time.Duration
	}{
		{name: "single pod closes after the idle window", closeAt: 30 * time.Millisecond},
		{name: "a pod inside the idle window extends it", triggers: []time.Duration{20 * time.Millisecond}, closeAt: 50 * time.Millisecond},
		{name: "a steady stream is cut at the max window",
			triggers: []time.Duration{20, 40, 60, 80, 100, 120}, closeAt: 100 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.triggers {
				if tc.triggers[i] < time.Millisecond {
					tc.triggers[i] *= time.Millisecond
				}
			}
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			b := NewBatcher(clk, 30*time.Millisecond, 100*time.Millisecond)
			done := make(chan bool, 1)
			b.Trigger()
			go func() { done <- b.Wait(context.Background()) }()
			start := clk.Now()
			next := 0
			for step := time.Duration(0); step <= 200*time.Millisecond; step += 10 * time.Millisecond {
				// Timers are armed on the Wait goroutine; let it get there before time moves.
				waitForWaiters(t, clk)
				clk.SetTime(start.Add(step))
				if next < len(tc.triggers) && tc.triggers[next] == step {
					b.Trigger()
					next++
				}
				select {
				case ok := <-done:
					if !ok {
						t.Fatal("Wait returned false without cancellation")
					}
					if step != tc.closeAt {
						t.Fatalf("batch closed at %v, want %v", step, tc.closeAt)
					}
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
			t.Fatalf("batch never closed; want %v", tc.closeAt)
		})
	}
}

func TestBatcherStopsWithContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := NewBatcher(clk, time.Second, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx) {
		t.Fatal("Wait returned true on a cancelled context with no trigger")
	}
}

func waitForWaiters(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Wait never armed its timers")
		}
		time.Sleep(time.Millisecond)
	}
}
