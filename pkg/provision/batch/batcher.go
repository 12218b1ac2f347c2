package batch

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Batcher gathers pending pods into batches: a batch opens at the first trigger and closes when
// no pod has arrived for the idle window, or when the max window has passed since it opened.
//
// Only arrivals keep a batch open (Trigger). Anything else that asks for a plan (a pod's status
// written, a node launched, a resync) only opens one when none is open (Nudge): the plan at the
// batch's close reads it anyway. A burst's pods draw a thousand status writes from the scheduler
// and a thousand nominations from Tailor right after they are created; when those held the batch
// open, its last pods waited for the max window instead of the idle one.
type Batcher struct {
	clock   clock.Clock
	idle    time.Duration
	max     time.Duration
	trigger chan struct{}
	nudge   chan struct{}
}

// New returns a Batcher with the given windows.
func New(clk clock.Clock, idle, maxWait time.Duration) *Batcher {
	return &Batcher{clock: clk, idle: idle, max: maxWait, trigger: make(chan struct{}, 1), nudge: make(chan struct{}, 1)}
}

// Trigger says that a pod arrived: it opens a batch, or extends the open one. It never blocks.
func (b *Batcher) Trigger() { signal(b.trigger) }

// Nudge asks for a plan without a pod arriving: it opens a batch when none is open, and leaves an
// open one to close in its own time. It never blocks.
func (b *Batcher) Nudge() { signal(b.nudge) }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Wait blocks until a batch opens and then closes. It returns false when ctx ends first.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-b.trigger:
	case <-b.nudge:
	case <-ctx.Done():
		return false
	}
	maxTimer := b.clock.NewTimer(b.max)
	defer maxTimer.Stop()
	idleTimer := b.clock.NewTimer(b.idle)
	defer idleTimer.Stop()
	for {
		select {
		case <-b.trigger:
			if !idleTimer.Stop() {
				<-idleTimer.C()
			}
			idleTimer.Reset(b.idle)
		case <-b.nudge:
			// Taken so that it does not open another batch once this one closes: this one's plan
			// reads what it was about.
		case <-idleTimer.C():
			return true
		case <-maxTimer.C():
			return true
		case <-ctx.Done():
			return false
		}
	}
}
