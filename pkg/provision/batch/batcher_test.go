package batch

import (
	"context"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBatcherClosesOnIdleAndMax(t *testing.T) {
	cases := []struct {
		name string
		// triggers are the offsets, from the first trigger, at which more pods arrive.
		triggers []time.Duration
		// nudges are the offsets at which something other than a pod asks for a plan.
		nudges []time.Duration
		// closeAt is when the batch must be closed, counted from the first trigger.
		closeAt time.Duration
	}{
		{name: "single pod closes after the idle window", closeAt: 30 * time.Millisecond},
		{name: "a pod inside the idle window extends it", triggers: []time.Duration{20 * time.Millisecond}, closeAt: 50 * time.Millisecond},
		{name: "a steady stream is cut at the max window",
			triggers: []time.Duration{20, 40, 60, 80, 100, 120}, closeAt: 100 * time.Millisecond},
		// A burst's status writes come on after its last pod: they must not hold its batch open.
		{name: "nudges inside the idle window do not extend it",
			triggers: []time.Duration{20}, nudges: []time.Duration{30, 40, 50, 60, 70}, closeAt: 50 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, offsets := range [][]time.Duration{tc.triggers, tc.nudges} {
				for i := range offsets {
					if offsets[i] < time.Millisecond {
						offsets[i] *= time.Millisecond
					}
				}
			}
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			b := New(clk, 30*time.Millisecond, 100*time.Millisecond, 0)
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
				if slices.Contains(tc.nudges, step) {
					b.Nudge()
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

func TestANudgeOpensABatchButNeverAnother(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := New(clk, 30*time.Millisecond, time.Second, 0)
	b.Nudge()
	done := make(chan bool, 1)
	go func() { done <- b.Wait(context.Background()) }()
	waitForWaiters(t, clk)
	// Nudges while the batch is open are absorbed by it: their plan is the one at its close.
	b.Nudge()
	taken(t, b)
	b.Nudge()
	taken(t, b)
	clk.Step(10 * time.Millisecond)
	b.Nudge()
	taken(t, b)
	clk.Step(20 * time.Millisecond)
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("Wait returned false without cancellation")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a batch opened by a nudge never closed after the idle window")
	}
	select {
	case <-b.nudge:
		t.Fatal("a nudge taken while the batch was open is left to open another")
	case <-b.trigger:
		t.Fatal("a nudge left a trigger behind")
	default:
	}
}

func TestBatcherStopsWithContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := New(clk, time.Second, time.Minute, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx) {
		t.Fatal("Wait returned true on a cancelled context with no trigger")
	}
}

// taken waits for the open batch to take the last nudge: a nudge and the idle window's end, ready
// at once, would leave the order to select.
func taken(t *testing.T, b *Batcher) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for len(b.nudge) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the open batch never took a nudge")
		}
		time.Sleep(time.Millisecond)
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

// A batch that only a nudge opened closes no sooner than the gap after the last one closed; a pod
// arriving (Trigger) or newly needing capacity (Soon) is not held by it.
func TestNudgesAreSpacedByTheGap(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cut is what, if anything, is signalled 100 ms into the held batch.
		cut     func(*Batcher)
		closeAt time.Duration // from the first batch's close
	}{
		{name: "a nudge alone waits for the gap", closeAt: 500 * time.Millisecond},
		{name: "a pod that needs capacity is not held", cut: (*Batcher).Soon, closeAt: 130 * time.Millisecond},
		{name: "an arriving pod is not held", cut: (*Batcher).Trigger, closeAt: 130 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			b := New(clk, 30*time.Millisecond, time.Second, 500*time.Millisecond)
			// The first batch is not held: nothing closed before it.
			b.Nudge()
			closeAfter(t, b, clk, 30*time.Millisecond, nil)
			b.Nudge()
			closeAfter(t, b, clk, tc.closeAt, tc.cut)
		})
	}
}

// closeAfter runs one Wait, stepping the clock by 10 ms, and fails unless the batch closes at
// want from the start; cut, if any, is called 100 ms in.
func closeAfter(t *testing.T, b *Batcher, clk *clocktesting.FakeClock, want time.Duration, cut func(*Batcher)) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- b.Wait(context.Background()) }()
	for step := time.Duration(0); step <= 2*time.Second; step += 10 * time.Millisecond {
		waitForWaiters(t, clk)
		if step > 0 {
			clk.Step(10 * time.Millisecond)
		}
		if cut != nil && step == 100*time.Millisecond {
			cut(b)
			for len(b.soon)+len(b.trigger) > 0 {
				time.Sleep(time.Millisecond)
			}
		}
		select {
		case <-done:
			if step != want {
				t.Fatalf("batch closed at %v, want %v", step, want)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("batch never closed; want %v", want)
}
