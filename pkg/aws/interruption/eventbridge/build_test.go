package eventbridge_test

import (
	"testing"
	"time"

	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
)

// TestMessageRoundTrips: every notice Message builds is read back by Parse as the same event, so
// what `tailor sandbox interrupt` sends is what the consumer acts on.
func TestMessageRoundTrips(t *testing.T) {
	at := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		notice   eventbridge.Notice
		want     eventbridge.Kind
		deadline time.Time
	}{
		{eventbridge.Notice{Kind: eventbridge.KindSpotInterruption}, eventbridge.KindSpotInterruption, at.Add(2 * time.Minute)},
		{eventbridge.Notice{Kind: eventbridge.KindRebalanceRecommendation}, eventbridge.KindRebalanceRecommendation, time.Time{}},
		{eventbridge.Notice{Kind: eventbridge.KindScheduledChange}, eventbridge.KindScheduledChange, at.Add(24 * time.Hour)},
		{eventbridge.Notice{Kind: eventbridge.KindInstanceStopping}, eventbridge.KindInstanceStopping, at},
		{eventbridge.Notice{Kind: eventbridge.KindInstanceTerminating, State: "terminated"}, eventbridge.KindInstanceTerminating, at},
		{eventbridge.Notice{Kind: eventbridge.KindCapacityReservationInterruption}, eventbridge.KindCapacityReservationInterruption, at.Add(2 * time.Minute)},
	} {
		t.Run(string(tc.notice.Kind), func(t *testing.T) {
			n := tc.notice
			n.InstanceID, n.Time = "i-0123456789abcdef0", at
			body, err := eventbridge.Message(n)
			if err != nil {
				t.Fatal(err)
			}
			events, err := eventbridge.Parse(body)
			if err != nil || len(events) != 1 {
				t.Fatalf("Parse = %+v, %v\n%s", events, err, body)
			}
			ev := events[0]
			if ev.Kind != tc.want || ev.InstanceID != n.InstanceID || !ev.Time.Equal(at) || !ev.Deadline.Equal(tc.deadline) || ev.MessageID == "" {
				t.Errorf("got %+v, want kind %s deadline %s", ev, tc.want, tc.deadline)
			}
		})
	}
	if _, err := eventbridge.Message(eventbridge.Notice{Kind: "Meteor", InstanceID: "i-1"}); err == nil {
		t.Error("an unknown kind built a message")
	}
}
