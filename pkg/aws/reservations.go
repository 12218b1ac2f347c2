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
// launches into it since, minus launches in flight, plus instances terminated since. EC2 stays the
// judge: a launch it refuses with ReservationCapacityExceeded marks the reservation full for the
// unavailable-offerings TTL.
type reservationTracker struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu        sync.Mutex
	seq       uint64
	available map[string]int
	observed  map[string]uint64
	inFlight  map[string]int
	fullUntil map[string]time.Time
}

func newReservationTracker(clk clock.PassiveClock, ttl time.Duration) *reservationTracker {
	return &reservationTracker{clock: clk, ttl: ttl, available: map[string]int{}, observed: map[string]uint64{},
		inFlight: map[string]int{}, fullUntil: map[string]time.Time{}}
}

// observe records the count EC2 described.
func (t *reservationTracker) observe(id string, available int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	t.available[id], t.observed[id] = available, t.seq
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

// take counts a launch in flight against each reservation that has room, and returns those, with
// the sequence number that done needs.
func (t *reservationTracker) take(ids []string) ([]string, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, id := range ids {
		if t.roomLocked(id) > 0 {
			t.inFlight[id]++
			out = append(out, id)
		}
	}
	t.seq++
	return out, t.seq
}

// done ends the launches take counted; launched is the reservation the instance went into, if
// any. It is subtracted only if EC2 was not described since the launch began: a describe in the
// meantime may already count it, and counting it twice would leave a slot unused, while counting
// it not at all costs at most one refused launch.
func (t *reservationTracker) done(ids []string, seq uint64, launched string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		t.inFlight[id]--
	}
	if launched != "" && t.observed[launched] < seq {
		t.available[launched]--
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
func (p *Provider) takeReservations(options []launchOption) ([]launchOption, []string, uint64) {
	var ids []string
	for _, o := range options {
		if id := o.offering.Labels[awsv1.LabelCapacityReservationID]; !contains(ids, id) {
			ids = append(ids, id)
		}
	}
	taken, seq := p.reservations.take(ids)
	var kept []launchOption
	for _, o := range options {
		if contains(taken, o.offering.Labels[awsv1.LabelCapacityReservationID]) {
			kept = append(kept, o)
		}
	}
	return kept, taken, seq
}

func templateName(lo *ec2types.LaunchTemplateAndOverridesResponse) string {
	if lo == nil || lo.LaunchTemplateSpecification == nil {
		return ""
	}
	return aws.ToString(lo.LaunchTemplateSpecification.LaunchTemplateName)
}
