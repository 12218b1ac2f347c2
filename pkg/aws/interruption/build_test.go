package interruption_test

import (
	"testing"
	"time"

	"github.com/tailor-sh/tailor/pkg/aws/interruption"
)

// TestMessageRoundTrips: every notice Message builds is read back by Parse as the same event, so
// what `tailor sandbox interrupt` sends is what the consumer acts on.
func TestMessageRoundTrips(t *testing.T) {
	at := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		notice   interruption.Notice
		want     interruption.Kind
		deadline time.Time
	}{
		{interruption.Notice{Kind: interruption.KindSpotInterruption}, interruption.KindSpotInterruption, at.Add(2 * time.Minute)},
		{interruption.Notice{Kind: interruption.KindRebalanceRecommendation}, interruption.KindRebalanceRecommendation, time.Time{}},
		{interruption.Notice{Kind: interruption.KindScheduledChange}, interruption.KindScheduledChange, at.Add(24 * time.Hour)},
		{interruption.Notice{Kind: interruption.KindInstanceStopping}, interruption.KindInstanceStopping, at},
		{interruption.Notice{Kind: interruption.KindInstanceTerminating, State: "terminated"}, interruption.KindInstanceTerminating, at},
		{interruption.Notice{Kind: interruption.KindCapacityReservationInterruption}, interruption.KindCapacityReservationInterruption, at.Add(2 * time.Minute)},
	} {
		t.Run(string(tc.notice.Kind), func(t *testing.T) {
			n := tc.notice
			n.InstanceID, n.Time = "i-0123456789abcdef0", at
			body, err := interruption.Message(n)
			if err != nil {
				t.Fatal(err)
			}
			events, err := interruption.Parse(body)
			if err != nil || len(events) != 1 {
				t.Fatalf("Parse = %+v, %v\n%s", events, err, body)
			}
			ev := events[0]
			if ev.Kind != tc.want || ev.InstanceID != n.InstanceID || !ev.Time.Equal(at) || !ev.Deadline.Equal(tc.deadline) || ev.MessageID == "" {
				t.Errorf("got %+v, want kind %s deadline %s", ev, tc.want, tc.deadline)
			}
		})
	}
	if _, err := interruption.Message(interruption.Notice{Kind: "Meteor", InstanceID: "i-1"}); err == nil {
		t.Error("an unknown kind built a message")
	}
}
