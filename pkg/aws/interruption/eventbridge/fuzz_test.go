package eventbridge

import (
	"strings"
	"testing"
	"time"
)

// FuzzParse reads arbitrary SQS message bodies as the consumer does. Seeds are the notices
// Message builds for every kind, as EventBridge delivers them. Properties: no panic; every event
// names an instance ID ("i-..."), carries the envelope's ID and time, and a deadline where its
// kind has one (never before the notice for a spot warning); an error for a well-formed envelope
// names the notice's detail-type and ID, so a log line points at the message; a notice Message
// builds reads back as the same kind and instance.
func FuzzParse(f *testing.F) {
	at := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	for _, n := range []Notice{
		{Kind: KindSpotInterruption, InstanceID: "i-0123456789abcdef0", Time: at},
		{Kind: KindRebalanceRecommendation, InstanceID: "i-0a", Time: at},
		{Kind: KindScheduledChange, InstanceID: "i-0b", Time: at},
		{Kind: KindInstanceStopping, InstanceID: "i-0c", State: "stopped", Time: at},
		{Kind: KindInstanceTerminating, InstanceID: "i-0d", Time: at},
		{Kind: KindCapacityReservationInterruption, InstanceID: "i-0e", Time: at},
		{Kind: KindInstanceStopping, InstanceID: "i-0f", State: "running", Time: at},
	} {
		body, err := Message(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add(`{"version":"0","id":"x","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-11-26T07:00:00Z","detail":{"instance-id":"not-an-id"}}`)
	f.Add(`{"version":"0","id":"h","detail-type":"AWS Health Event","source":"aws.health","time":"2026-11-26T07:00:00Z","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","startTime":"yesterday"}}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, body string) {
		events, err := Parse(body)
		if err != nil {
			if strings.Contains(err.Error(), "detail") && !strings.HasPrefix(err.Error(), "not an EventBridge event") {
				// Errors about the detail come from a readable envelope: they name it.
				if !strings.Contains(err.Error(), ": detail") {
					t.Fatalf("error about the detail does not name the field: %v", err)
				}
			}
			return
		}
		for _, ev := range events {
			if !strings.HasPrefix(ev.InstanceID, "i-") {
				t.Fatalf("event for %q, which is not an instance ID", ev.InstanceID)
			}
			switch ev.Kind {
			case KindSpotInterruption, KindCapacityReservationInterruption:
				if !ev.Deadline.Equal(ev.Time.Add(spotNoticePeriod)) {
					t.Fatalf("%s deadline %s, want two minutes after %s", ev.Kind, ev.Deadline, ev.Time)
				}
			case KindRebalanceRecommendation:
				if !ev.Deadline.IsZero() {
					t.Fatalf("a rebalance recommendation has no deadline, got %s", ev.Deadline)
				}
			case KindInstanceStopping, KindInstanceTerminating:
				if !ev.Deadline.Equal(ev.Time) {
					t.Fatalf("%s is due when it happens, got %s for %s", ev.Kind, ev.Deadline, ev.Time)
				}
			case KindScheduledChange:
				if ev.Deadline.IsZero() {
					t.Fatal("a scheduled change without its start")
				}
			default:
				t.Fatalf("unknown kind %q", ev.Kind)
			}
			// What was read can be sent again and reads the same (e.g. a test replays a notice).
			if ev.Kind == KindScheduledChange || ev.Time.Year() < 1 || ev.Time.Year() > 9999 {
				continue
			}
			again, err := Message(Notice{Kind: ev.Kind, InstanceID: ev.InstanceID, Time: ev.Time})
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(again)
			if err != nil || len(back) != 1 || back[0].Kind != ev.Kind || back[0].InstanceID != ev.InstanceID {
				t.Fatalf("a notice rebuilt from %+v reads as %+v (%v)", ev, back, err)
			}
		}
	})
}
