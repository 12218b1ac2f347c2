package emulator

import (
	"time"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Faults are injected through these methods, never by chance, so a test says what went wrong.

// InjectInsufficientCapacity makes CreateFleet fail the offerings with InsufficientInstanceCapacity
// until ClearInsufficientCapacity.
func (e *Emulator) InjectInsufficientCapacity(keys ...cloud.OfferingKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		e.faults.ice[k] = true
	}
}

// ClearInsufficientCapacity ends every injected capacity shortage.
func (e *Emulator) ClearInsufficientCapacity() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults.ice = map[cloud.OfferingKey]bool{}
}

// Throttle makes the next n requests for action ("" for any action) fail with the service's
// throttling error (RequestLimitExceeded on EC2, ThrottlingException on the JSON services).
func (e *Emulator) Throttle(action string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults.throttle[action] += n
}

// ThrottleEC2For answers every EC2 call with RequestLimitExceeded (HTTP 503 and EC2's XML error
// body, as EC2 does when an account exceeds its API rate) for d from now on the emulator's clock,
// whatever the caller does meanwhile: EC2 throttles by the account's recent request rate, so a
// client that keeps calling stays throttled, and only backing off gets it through afterwards.
func (e *Emulator) ThrottleEC2For(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults.throttleEC2Until = e.clock.Now().Add(d)
}

// ClearThrottle cancels every pending throttle and throttling window.
func (e *Emulator) ClearThrottle() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults.throttle = map[string]int{}
	e.faults.throttleEC2Until = time.Time{}
}

// Call is one request the emulator received.
type Call struct {
	// Time is when it arrived, on the emulator's clock.
	Time   time.Time
	Action string
	// EC2 tells EC2 calls from those of the other services.
	EC2       bool
	Throttled bool
}

// maxCallLog is how many of the latest calls CallLog keeps at least (at most twice as many).
const maxCallLog = 100_000

// CallLog returns the requests received so far (the latest maxCallLog at least), in order of
// arrival; tests count them per second to see whether a client backs off.
func (e *Emulator) CallLog() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.log...)
}

// SetLatency delays every response, of every service, by d (real time: it is network latency,
// not cloud time); 0 ends it.
func (e *Emulator) SetLatency(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults.latency = d
}

type faults struct {
	ice      map[cloud.OfferingKey]bool
	throttle map[string]int
	denied   map[string]bool
	latency  time.Duration
	// throttleEC2Until ends a window in which every EC2 call is throttled.
	throttleEC2Until time.Time
}

func newFaults() faults {
	return faults{ice: map[cloud.OfferingKey]bool{}, throttle: map[string]int{}, denied: map[string]bool{}}
}

// Deny makes every request for the EC2 action fail with UnauthorizedOperation, as when the
// controller's IAM policy lacks ec2:<action>, until Allow.
func (e *Emulator) Deny(action string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults.denied[action] = true
}

// Allow ends a Deny.
func (e *Emulator) Allow(action string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.faults.denied, action)
}

// take consumes one throttle for the action, if any is pending, and says whether an EC2 call at
// now falls in a throttling window. Callers hold e.mu.
func (f *faults) take(action string, ec2 bool, now time.Time) (time.Duration, bool) {
	for _, key := range []string{action, ""} {
		if f.throttle[key] > 0 {
			f.throttle[key]--
			return f.latency, true
		}
	}
	return f.latency, ec2 && now.Before(f.throttleEC2Until)
}
