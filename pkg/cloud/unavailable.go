package cloud

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// UnavailableTTL is how long an offering that ran out of capacity is left out of plans, as in
// Karpenter: long enough not to retry it at once, short enough to use it again when it recovers.
const UnavailableTTL = 3 * time.Minute

// UnavailableOfferings remembers offerings a launch found without capacity, each until its TTL
// ends. Providers consult it when they report InstanceTypes, so the planner stops choosing them.
type UnavailableOfferings struct {
	clock clock.PassiveClock
	ttl   time.Duration
	mu    sync.Mutex
	until map[OfferingKey]time.Time
	// changes counts what may change the answers of Has: marks, clears and lapsed marks.
	changes uint64
}

// NewUnavailableOfferings returns an empty cache on clk whose marks last UnavailableTTL.
func NewUnavailableOfferings(clk clock.PassiveClock) *UnavailableOfferings {
	return NewUnavailableOfferingsFor(clk, UnavailableTTL)
}

// NewUnavailableOfferingsFor returns an empty cache on clk whose marks last ttl (a provider's
// setting, as the AWS provider's UnavailableOfferingsTTL).
func NewUnavailableOfferingsFor(clk clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	return &UnavailableOfferings{clock: clk, ttl: ttl, until: map[OfferingKey]time.Time{}}
}

// Mark records that the offerings had no capacity just now. Marking none changes nothing, not
// even Version: every launch reports what it found short, most often nothing.
func (u *UnavailableOfferings) Mark(keys ...OfferingKey) {
	if len(keys) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	end := u.clock.Now().Add(u.ttl)
	for _, k := range keys {
		u.until[k] = end
	}
	u.changes++
}

// Has reports whether the offering is still marked unavailable.
func (u *UnavailableOfferings) Has(k OfferingKey) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	end, ok := u.until[k]
	if !ok {
		return false
	}
	if !u.clock.Now().Before(end) {
		delete(u.until, k)
		u.changes++
		return false
	}
	return true
}

// Version is the same number for as long as Has gives the same answers: it changes with a mark,
// a clear, and a mark's lapse. A provider keeps what it built from the marks while it holds.
func (u *UnavailableOfferings) Version() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	for k, end := range u.until {
		if !now.Before(end) {
			delete(u.until, k)
			u.changes++
		}
	}
	return u.changes
}

// Clear forgets every mark.
func (u *UnavailableOfferings) Clear() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until = map[OfferingKey]time.Time{}
	u.changes++
}
