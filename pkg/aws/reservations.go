package aws

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// reservedPriceDivisor: Karpenter prices a reserved offering at its on-demand price divided by
// ten million. A reservation is paid for whether it is used or not, so using it costs nearly
// nothing; keeping the on-demand ratio still orders reserved offerings among themselves.
const reservedPriceDivisor = 10_000_000

// reservationTracker counts what is left of each capacity reservation between describes, so that
// claims launched at once do not all aim at its last slot: the count EC2 last reported, minus
// Tailor's launches into it since, minus its launches in flight, plus the instances it terminated
// since. EC2 stays the judge: a launch it refuses with ReservationCapacityExceeded marks the
// reservation full for the unavailable-offerings TTL.
//
// A describe that overlapped one of Tailor's launches into the reservation, or a termination, may
// or may not count that instance, and either guess can be wrong: counted twice, the slot goes
// unused and the next claim launches on-demand beside a free reservation; not counted, a launch is
// refused and the reservation is marked full for the whole TTL. Such a describe is set aside and
// the count Tailor kept is trusted; the next describe that overlaps nothing corrects it for
// instances launched or ended by anyone else.
type reservationTracker struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu  sync.Mutex
	seq uint64
	// available is the count as of the describe begun at began, kept current by Tailor's own
	// launches and terminations since.
	available map[string]int
	began     map[string]uint64
	// changed is when Tailor last finished a launch into, or a termination out of, the reservation.
	changed   map[string]uint64
	inFlight  map[string]int
	fullUntil map[string]time.Time
}

func newReservationTracker(clk clock.PassiveClock, ttl time.Duration) *reservationTracker {
	return &reservationTracker{clock: clk, ttl: ttl, available: map[string]int{}, began: map[string]uint64{},
		changed: map[string]uint64{}, inFlight: map[string]int{}, fullUntil: map[string]time.Time{}}
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

// observe records the count a describe begun at began reported, unless a later describe already
// did, or the answer may have raced one of Tailor's own launches or terminations (see the type).
func (t *reservationTracker) observe(id string, available int, began uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, known := t.available[id]; known && (began < t.began[id] || t.inFlight[id] > 0 || t.changed[id] > began) {
		return
	}
	t.available[id], t.began[id] = available, began
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
// any, whose count it lowers.
func (t *reservationTracker) done(ids []string, launched string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		t.inFlight[id]--
	}
	if launched != "" {
		t.available[launched]--
		t.seq++
		t.changed[launched] = t.seq
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
	t.available[id]++
	t.seq++
	t.changed[id] = t.seq
	delete(t.fullUntil, id)
}

// reservationsFor lists the class's reservations of a type, by ID.
func reservationsFor(status []awsv1.CapacityReservation, instanceType string) []awsv1.CapacityReservation {
	var out []awsv1.CapacityReservation
	for _, cr := range status {
		if cr.InstanceType == instanceType {
			out = append(out, cr)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// errReservationsFull says every reservation a reserved launch could use was taken by launches in
// flight, so none was attempted.
var errReservationsFull = errors.New("every capacity reservation the claim may use is taken by launches in flight")

// takeReservations keeps the reserved options whose reservation still has room, counting a
// launch in flight against each until done.
func (p *Provider) takeReservations(options []launchOption) ([]launchOption, []string) {
	var ids []string
	for _, o := range options {
		if id := o.offering.Labels[awsv1.LabelCapacityReservationID]; !contains(ids, id) {
			ids = append(ids, id)
		}
	}
	taken := p.reservations.take(ids)
	var kept []launchOption
	for _, o := range options {
		if contains(taken, o.offering.Labels[awsv1.LabelCapacityReservationID]) {
			kept = append(kept, o)
		}
	}
	return kept, taken
}

func templateName(lo *ec2types.LaunchTemplateAndOverridesResponse) string {
	if lo == nil || lo.LaunchTemplateSpecification == nil {
		return ""
	}
	return aws.ToString(lo.LaunchTemplateSpecification.LaunchTemplateName)
}
