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
//
// A batch that only nudges opened closes no sooner than the gap after the last batch closed: a
// storm of status writes or a resync asks for a plan many times a second, and each would
// otherwise be a round. A pod newly known to need capacity (Soon) is not held by the gap.
type Batcher struct {
	clock   clock.Clock
	idle    time.Duration
	max     time.Duration
	gap     time.Duration
	trigger chan struct{}
	nudge   chan struct{}
	soon    chan struct{}
	// last is when the last batch closed; only Wait's goroutine touches it.
	last time.Time
}

// New returns a Batcher with the given windows, whose nudges are spaced by gap (0: not spaced).
func New(clk clock.Clock, idle, maxWait, gap time.Duration) *Batcher {
	return &Batcher{clock: clk, idle: idle, max: maxWait, gap: gap,
		trigger: make(chan struct{}, 1), nudge: make(chan struct{}, 1), soon: make(chan struct{}, 1)}
}

// Trigger says that a pod arrived: it opens a batch, or extends the open one. It never blocks.
func (b *Batcher) Trigger() { signal(b.trigger) }

// Nudge asks for a plan without a pod arriving: it opens a batch when none is open, and leaves an
// open one to close in its own time. It never blocks.
func (b *Batcher) Nudge() { signal(b.nudge) }

// Soon is a Nudge that the gap does not hold: a pod is newly known to need capacity. An open
// batch that the gap holds closes after the idle window instead. It never blocks.
func (b *Batcher) Soon() { signal(b.soon) }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Wait blocks until a batch opens and then closes. It returns false when ctx ends first.
func (b *Batcher) Wait(ctx context.Context) bool {
	idle := b.idle
	select {
	case <-b.trigger:
	case <-b.soon:
	case <-b.nudge:
		if !b.last.IsZero() {
			idle = max(idle, b.last.Add(b.gap).Sub(b.clock.Now()))
		}
	case <-ctx.Done():
		return false
	}
	maxTimer := b.clock.NewTimer(max(b.max, idle))
	defer maxTimer.Stop()
	idleTimer := b.clock.NewTimer(idle)
	defer idleTimer.Stop()
	held := idle > b.idle // by the gap
	reset := func() {
		if !idleTimer.Stop() {
			<-idleTimer.C()
		}
		idleTimer.Reset(b.idle)
		held = false
	}
	for {
		select {
		case <-b.trigger:
			reset()
		case <-b.soon:
			if held {
				reset()
			}
		case <-b.nudge:
			// Taken so that it does not open another batch once this one closes: this one's plan
			// reads what it was about.
		case <-idleTimer.C():
			return b.closed()
		case <-maxTimer.C():
			return b.closed()
		case <-ctx.Done():
			return false
		}
	}
}

func (b *Batcher) closed() bool {
	b.last = b.clock.Now()
	return true
}
