package cloud

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Launch backoff bounds. A permanent error (see PermanentLaunchError) holds its NodePool back
// for LaunchBackoffBase, doubling with each failure in a row up to LaunchBackoffMax: long enough
// that a broken node class makes a handful of launch attempts an hour instead of one a second,
// short enough that fixing it (or a role's permission) shows within minutes without a restart.
const (
	LaunchBackoffBase = 30 * time.Second
	LaunchBackoffMax  = 5 * time.Minute
)

// LaunchBackoff remembers NodePool and node class pairs whose launches failed permanently, so
// the provisioner leaves them out of plans for a while instead of replacing the failed
// NodeClaim at once, again and again. It is memory only: after a restart one launch finds out
// again.
type LaunchBackoff struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	entries map[backoffKey]*backoffEntry
}

type backoffKey struct{ nodePool, nodeClass string }

type backoffEntry struct {
	until   time.Time
	delay   time.Duration
	message string
}

// NewLaunchBackoff returns an empty backoff on clk.
func NewLaunchBackoff(clk clock.PassiveClock) *LaunchBackoff {
	return &LaunchBackoff{clock: clk, entries: map[backoffKey]*backoffEntry{}}
}

// Fail records a permanent failure of a launch from the pool and class, with the cloud's
// message, and returns how long they are held back. A failure soon after the last hold ended
// doubles the hold; one long after starts again from the base.
func (b *LaunchBackoff) Fail(nodePool, nodeClass, message string) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	k := backoffKey{nodePool, nodeClass}
	e, ok := b.entries[k]
	switch {
	case !ok || now.Sub(e.until) > LaunchBackoffMax:
		e = &backoffEntry{delay: LaunchBackoffBase}
		b.entries[k] = e
	default:
		e.delay = min(2*e.delay, LaunchBackoffMax)
	}
	e.until, e.message = now.Add(e.delay), message
	return e.delay
}

// Held reports whether launches from the pool and class are held back now, until when, and the
// message of the failure that holds them.
func (b *LaunchBackoff) Held(nodePool, nodeClass string) (until time.Time, message string, held bool) {
	if b == nil {
		return time.Time{}, "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[backoffKey{nodePool, nodeClass}]
	if !ok || !b.clock.Now().Before(e.until) {
		return time.Time{}, "", false
	}
	return e.until, e.message, true
}

// Succeeded forgets the pool and class's failures: a launch from them worked.
func (b *LaunchBackoff) Succeeded(nodePool, nodeClass string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, backoffKey{nodePool, nodeClass})
}
