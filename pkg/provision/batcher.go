package provision

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Batcher gathers triggers into batches: a batch opens at the first trigger and closes when no
// trigger has come for the idle window, or when the max window has passed since it opened.
type Batcher struct {
	clock   clock.Clock
	idle    time.Duration
	max     time.Duration
	trigger chan struct{}
}

// NewBatcher returns a Batcher with the given windows.
func NewBatcher(clk clock.Clock, idle, max time.Duration) *Batcher {
	return &Batcher{clock: clk, idle: idle, max: max, trigger: make(chan struct{}, 1)}
}

// Trigger opens a batch, or extends the open one. It never blocks.
func (b *Batcher) Trigger() {
	select {
	case b.trigger <- struct{}{}:
	default:
	}
}

// Wait blocks until a batch opens and then closes. It returns false when ctx ends first.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-b.trigger:
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
		case <-idleTimer.C():
			return true
		case <-maxTimer.C():
			return true
		case <-ctx.Done():
			return false
		}
	}
}
