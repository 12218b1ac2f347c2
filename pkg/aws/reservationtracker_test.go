package aws

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestReservationCountSurvivesDescribesThatRaceLaunches: a describe answered while one of Tailor's
// launches into the reservation was in flight, or sent before a launch or termination Tailor has
// since finished, may or may not count that instance. The count Tailor kept stands while the
// describe allows it either way, and is moved when it does not: others launch and end instances
// too. Each case starts from a reservation of two, described empty.
func TestReservationCountSurvivesDescribesThatRaceLaunches(t *testing.T) {
	const id = "cr-1"
	for _, tc := range []struct {
		name string
		// run drives the tracker through the race.
		run  func(tr *reservationTracker)
		want int
	}{
		{"a describe that counts a launch still in flight", func(tr *reservationTracker) {
			tr.take([]string{id})
			tr.describing()(id, 1) // EC2 already runs the instance; Tailor has not heard back.
		}, 1},
		{"a describe that counts a launch still in flight, which then ends", func(tr *reservationTracker) {
			a := tr.take([]string{id})
			tr.describing()(id, 1)
			tr.done(a, id)
		}, 1},
		{"a describe that does not count a launch still in flight", func(tr *reservationTracker) {
			a := tr.take([]string{id})
			tr.describing()(id, 2)
			tr.done(a, id)
		}, 1},
		{"a describe sent before a launch ended, answered after", func(tr *reservationTracker) {
			a := tr.take([]string{id})
			observe := tr.describing()
			tr.done(a, id)
			observe(id, 2)
		}, 1},
		{"a describe sent before a launch was taken, answered while it is in flight", func(tr *reservationTracker) {
			observe := tr.describing()
			tr.take([]string{id})
			observe(id, 1)
		}, 1},
		{"a describe sent after the launch ended sees someone else's instance", func(tr *reservationTracker) {
			tr.done(tr.take([]string{id}), id)
			tr.describing()(id, 0)
		}, 0},
		{"a describe sent before a termination, answered after", func(tr *reservationTracker) {
			tr.done(tr.take([]string{id}), id)
			tr.done(tr.take([]string{id}), id)
			observe := tr.describing()
			tr.released(id)
			observe(id, 0)
		}, 1},
		{"an older describe answered after a newer one", func(tr *reservationTracker) {
			older := tr.describing()
			tr.describing()(id, 1)
			older(id, 2)
		}, 1},
		{"someone else's instance ends while Tailor's launch is in flight", func(tr *reservationTracker) {
			tr.describing()(id, 1)
			tr.take([]string{id})
			tr.describing()(id, 2)
		}, 1},
		{"someone else takes the last slots while Tailor's launch is in flight", func(tr *reservationTracker) {
			tr.take([]string{id})
			tr.describing()(id, 0)
		}, 0},
		{"an instance handed back in a reservation the launch did not take", func(tr *reservationTracker) {
			tr.done(tr.take([]string{"cr-2"}), id)
		}, 2},
		{"a launch that went elsewhere", func(tr *reservationTracker) {
			a := tr.take([]string{id})
			tr.done(a, "")
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newReservationTracker(clocktesting.NewFakePassiveClock(time.Now()), time.Minute)
			tr.describing()(id, 2)
			tc.run(tr)
			if got := tr.room(id); got != tc.want {
				t.Errorf("room = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestReservationTakenByLaunchesInFlight: launches in flight hold their slots, and one that finds
// none left is not offered the reservation.
func TestReservationTakenByLaunchesInFlight(t *testing.T) {
	tr := newReservationTracker(clocktesting.NewFakePassiveClock(time.Now()), time.Minute)
	tr.describing()("cr-1", 2)
	a, b, c := tr.take([]string{"cr-1"}), tr.take([]string{"cr-1"}), tr.take([]string{"cr-1"})
	if len(a) != 1 || len(b) != 1 || len(c) != 0 {
		t.Fatalf("three launches took %v, %v, %v; want the first two", a, b, c)
	}
	tr.done(a, "")
	if got := tr.room("cr-1"); got != 1 {
		t.Errorf("room after a launch went elsewhere = %d, want 1", got)
	}
}
