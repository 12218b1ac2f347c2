package sandbox

import (
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// OffsetClock is the real clock shifted by an offset that tests can move forward: timers and
// tickers run in real time, but Now jumps, so "15 minutes have passed" takes no 15 minutes. The
// API server keeps real time, so only Tailor's own view of time moves.
type OffsetClock struct {
	clock.RealClock
	offset atomic.Int64
}

var _ clock.WithTicker = (*OffsetClock)(nil)

// Now is the real time plus the offset.
func (c *OffsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Since is Now minus t.
func (c *OffsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Step moves the clock forward by d.
func (c *OffsetClock) Step(d time.Duration) { c.offset.Add(int64(d)) }
