package aws

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// reservationTracker counts what is left of each capacity reservation between describes, so that
// claims launched at once do not all aim at its last slot: the count EC2 last reported, minus
// Tailor's launches into it since, minus its launches in flight, plus the instances it terminated
// since. EC2 stays the judge: a launch it refuses with ReservationCapacityExceeded marks the
// reservation full for the unavailable-offerings TTL.
//
// A describe that overlapped Tailor's own launches or terminations may or may not count them, and
// taking it at its word can be wrong either way: counted twice, a slot goes unused and the next
// claim launches on-demand beside a free reservation (CI once saw two of three); not counted, a
// launch is refused and the reservation is marked full for the TTL. So a describe does not replace
// Tailor's count; it bounds it. With d described, L of Tailor's launches into the reservation and
// R of its terminations finished after the describe was sent, and I launches that may land in it
// still in flight, the free slots now (launches in flight aside) are at least d-L and at most
// d+R+I. Tailor's count is kept when it is within those bounds and moved to the nearer one when it
// is not, which picks up what others launched or ended, even while Tailor never stops launching.
type reservationTracker struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu  sync.Mutex
	seq uint64
	// available is the count as of the describe begun at began, kept current by Tailor's own
	// launches and terminations since, which since lists.
	available map[string]int
	began     map[string]uint64
	since     map[string][]slotChange
	inFlight  map[string]int
	fullUntil map[string]time.Time
}

// slotChange is one of Tailor's launches into a reservation (-1) or terminations out of it (+1),
// finished at seq.
type slotChange struct {
	seq   uint64
	delta int
}

func newReservationTracker(clk clock.PassiveClock, ttl time.Duration) *reservationTracker {
	return &reservationTracker{clock: clk, ttl: ttl, available: map[string]int{}, began: map[string]uint64{},
		since: map[string][]slotChange{}, inFlight: map[string]int{}, fullUntil: map[string]time.Time{}}
}

// describing is called as a describe of capacity reservations is sent; the function it returns is
// told each reservation's available count from the answer.
func (t *reservationTracker) describing() func(id string, available int) {
	t.mu.Lock()
	t.seq++
	began := t.seq
	t.mu.Unlock()
	return func(id string, available int) { t.observe(id, available, began) }
}

// observe bounds the count with what a describe begun at began reported (see the type), unless a
// describe begun later was observed already. The first describe of a reservation sets its count.
func (t *reservationTracker) observe(id string, described int, began uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	last, known := t.began[id]
	if known && began < last {
		return
	}
	lo, hi := described, described+t.inFlight[id]
	var after []slotChange
	for _, c := range t.since[id] {
		if c.seq < began {
			continue // finished before the describe was sent: EC2 counted it
		}
		after = append(after, c)
		if c.delta < 0 {
			lo += c.delta
		} else {
			hi += c.delta
		}
	}
	t.since[id], t.began[id] = after, began
	if !known {
		t.available[id] = described
		return
	}
	t.available[id] = min(max(t.available[id], lo), hi)
}

// room is how many more launches the reservation may take now.
func (t *reservationTracker) room(id string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.roomLocked(id)
}

func (t *reservationTracker) roomLocked(id string) int {
	if until, ok := t.fullUntil[id]; ok && t.clock.Now().Before(until) {
		return 0
	}
	return t.available[id] - t.inFlight[id]
}

// take counts a launch in flight against each reservation that has room, and returns those.
func (t *reservationTracker) take(ids []string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, id := range ids {
		if t.roomLocked(id) > 0 {
			t.inFlight[id]++
			out = append(out, id)
		}
	}
	return out
}

// done ends the launches take counted; launched is the reservation the instance went into, if
// any, whose count it lowers. An instance EC2 handed back for a client token it had seen may be in
// a reservation this launch did not take; it is left to the next describe rather than guessed at.
func (t *reservationTracker) done(ids []string, launched string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		t.inFlight[id]--
	}
	if launched != "" && contains(ids, launched) {
		t.changeLocked(launched, -1)
	}
}

// full marks the reservation as taking no launches for the TTL (EC2 said so).
func (t *reservationTracker) full(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fullUntil[id] = t.clock.Now().Add(t.ttl)
}

// released gives a terminated instance's slot back.
func (t *reservationTracker) released(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.changeLocked(id, +1)
	delete(t.fullUntil, id)
}

func (t *reservationTracker) changeLocked(id string, delta int) {
	t.seq++
	t.available[id] += delta
	t.since[id] = append(t.since[id], slotChange{seq: t.seq, delta: delta})
}
