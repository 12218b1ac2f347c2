package fake

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

func TestInterruptionsAreDeliveredRetriedAndKept(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	p := New(Options{Clock: clk, ClusterName: "test"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := p.Create(ctx, newClaim("a", corev1.ResourceList{}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Create(ctx, newClaim("b", corev1.ResourceList{}))
	if err != nil {
		t.Fatal(err)
	}

	got := make(chan cloud.Interruption, 4)
	var failedOnce atomic.Bool
	go func() {
		_ = p.HandleInterruptions(ctx, func(_ context.Context, n cloud.Interruption) error {
			if n.ProviderID == a.Status.ProviderID && failedOnce.CompareAndSwap(false, true) {
				return errors.New("API server unavailable")
			}
			got <- n
			return nil
		})
	}()
	deadline := epoch.Add(2 * time.Minute)
	p.InjectInterruption(cloud.Interruption{ProviderID: a.Status.ProviderID, Kind: cloud.InterruptionSpot, Deadline: deadline})
	p.InjectInterruption(cloud.Interruption{ProviderID: b.Status.ProviderID, Kind: cloud.InterruptionRebalance})

	// The rebalance arrives; the spot notice failed once and waits for its redelivery.
	if n := <-got; n.Kind != cloud.InterruptionRebalance {
		t.Fatalf("first delivered %+v, want the rebalance recommendation", n)
	}
	// Two timers: the deadline's and the redelivery's.
	for clk.Waiters() < 2 {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Second)
	select {
	case n := <-got:
		if n.ProviderID != a.Status.ProviderID || n.Kind != cloud.InterruptionSpot || !n.Deadline.Equal(deadline) {
			t.Fatalf("redelivered %+v", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failed notice was not delivered again")
	}

	// At the deadline the cloud takes the spot instance; the rebalanced one stays.
	clk.Step(2 * time.Minute)
	for start := time.Now(); len(p.Reclaimed()) == 0 && time.Since(start) < 10*time.Second; {
		time.Sleep(time.Millisecond)
	}
	if r := p.Reclaimed(); len(r) != 1 || r[0] != a.Status.ProviderID {
		t.Fatalf("reclaimed %v, want only %s", r, a.Status.ProviderID)
	}
	if _, err := p.Get(ctx, a.Status.ProviderID); !cloud.IsNotFound(err) {
		t.Fatalf("Get of the reclaimed instance: %v, want NotFound", err)
	}
	if _, err := p.Get(ctx, b.Status.ProviderID); err != nil {
		t.Fatalf("the rebalanced instance is gone: %v", err)
	}
}
