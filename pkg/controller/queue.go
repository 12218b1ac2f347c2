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
}

// NewQueue returns a queue named name (for logs and metrics) on clk.
func NewQueue(name string, clk clock.WithTicker, reconcile Reconcile) *Queue {
	return &Queue{name: name, clock: clk, reconcile: reconcile, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk})}
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
	case err != nil:
		// A conflict only means the cache was behind; the retry reads the newer object.
		if !apierrors.IsConflict(err) {
			klog.FromContext(ctx).Error(err, "Reconciling failed; retrying with backoff", "key", key)
		}
		q.queue.AddRateLimited(key)
	case requeue > 0:
		q.queue.Forget(key)
		q.queue.AddAfter(key, requeue)
	default:
		q.queue.Forget(key)
	}
	return true
}
