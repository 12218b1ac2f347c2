// Package controller holds the one work-queue loop Tailor's keyed controllers share: read a key,
// reconcile it, and requeue with backoff on error or after the delay the reconciler asks for.
package controller

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/metrics"
)

// Reconcile takes the object named key one step along and says when to look again (0: only on
// its next event).
type Reconcile func(ctx context.Context, key string) (time.Duration, error)

// Queue is a rate-limited work queue of object names with its reconciler.
type Queue struct {
	name      string
	clock     clock.PassiveClock
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile Reconcile
	// conflicts spaces the retries of one key after write conflicts, apart from the queue's
	// rate limiter (see processNext).
	conflicts workqueue.TypedRateLimiter[string]
}

// conflictBackoff bounds the retries of a key whose writes keep conflicting: 5 ms doubling, as
// the queue's own per-key backoff, up to a few seconds, since the newer object is always on its
// way through the informer.
const (
	conflictBackoffBase = 5 * time.Millisecond
	conflictBackoffMax  = 5 * time.Second
)

// NewQueue returns a queue named name (for logs and metrics) on clk.
func NewQueue(name string, clk clock.WithTicker, reconcile Reconcile) *Queue {
	return &Queue{name: name, clock: clk, reconcile: reconcile, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk}),
		conflicts: workqueue.NewTypedItemExponentialFailureRateLimiter[string](conflictBackoffBase, conflictBackoffMax)}
}

// Add queues key.
func (q *Queue) Add(key string) { q.queue.Add(key) }

// Run works the queue with several workers until ctx ends, so one slow object does not hold up
// the others.
func (q *Queue) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer q.queue.ShutDown()
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName(q.name))
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for q.processNext(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

func (q *Queue) processNext(ctx context.Context) bool {
	key, quit := q.queue.Get()
	if quit {
		return false
	}
	defer q.queue.Done(key)
	start := q.clock.Now()
	requeue, err := q.reconcile(ctx, key)
	// Counted by controller-runtime's names, which Karpenter's performance dashboard charts.
	metrics.Reconciled(q.name, q.clock.Since(start), requeue, err)
	switch {
	case apierrors.IsConflict(err):
		// A conflict only means the cache was behind; the retry reads the newer object. It
		// waits on its own key's backoff and not on the queue's rate limiter, whose bucket lets
		// ten retries a second through the whole queue: when 250 NodeClaims launched at once,
		// the lifecycle's writes met 669 conflicts (its own status write racing the next event,
		// the drift and consolidation controllers' writes), and the last retries waited up to a
		// minute behind the others for a write that takes milliseconds.
		q.queue.AddAfter(key, q.conflicts.When(key))
	case err != nil:
		klog.FromContext(ctx).Error(err, "Reconciling failed; retrying with backoff", "key", key)
		q.queue.AddRateLimited(key)
	case requeue > 0:
		q.forget(key)
		q.queue.AddAfter(key, requeue)
	default:
		q.forget(key)
	}
	return true
}

// forget ends the backoffs of a key that reconciled.
func (q *Queue) forget(key string) {
	q.queue.Forget(key)
	q.conflicts.Forget(key)
}
