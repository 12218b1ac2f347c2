package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// Two hundred keys each meet a write conflict once, as a burst of NodeClaims does when their
// writes race the informer. Each retry must come after its own key's short backoff, within two
// seconds of the queue's clock: the queue-wide rate limiter, which lets ten retries a second
// through after a burst of 100, would leave about 80 of them waiting beyond that.
func TestConflictsRetryOnTheirOwnBackoff(t *testing.T) {
	const keys = 200
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var mu sync.Mutex
	tries := map[string]int{}
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodeclaims"}, "x", fmt.Errorf("the object has been modified"))
	q := NewQueue("test", clk, func(_ context.Context, key string) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		tries[key]++
		if tries[key] == 1 {
			return 0, conflict
		}
		return 0, nil
	})
	count := func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		c := 0
		for _, v := range tries {
			if v >= n {
				c++
			}
		}
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx, 4)
	for i := range keys {
		q.Add(fmt.Sprintf("claim-%d", i))
	}
	waitFor(t, func() bool { return count(1) == keys }, "every key's first try")
	// Step the queue's clock a little at a time: a retry is due once its backoff has passed on
	// that clock after the queue took it in, which may be a moment after the step before.
	for stepped := time.Duration(0); count(2) < keys; stepped += 50 * time.Millisecond {
		if stepped > 2*time.Second {
			t.Fatalf("%d of %d keys retried %s after their conflicts, want all", count(2), keys, stepped)
		}
		clk.Step(50 * time.Millisecond)
		time.Sleep(20 * time.Millisecond)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
