package interruption_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
)

const (
	spot = `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning",
 "source":"aws.ec2","account":"123456789012","time":"2026-08-11T14:00:00Z","region":"us-west-2",
 "resources":["arn:aws:ec2:us-west-2:123456789012:instance/i-0123456789abcdef0"],
 "detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`
	rebalance = `{"version":"0","id":"12345678-1234-1234-1234-123456789012","detail-type":"EC2 Instance Rebalance Recommendation",
 "source":"aws.ec2","account":"123456789012","time":"2026-08-11T13:58:00Z","region":"us-west-2",
 "resources":["arn:aws:ec2:us-west-2:123456789012:instance/i-0123456789abcdef0"],"detail":{"instance-id":"i-0123456789abcdef0"}}`
	stateChange = `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification",
 "source":"aws.ec2","account":"123456789012","time":"2026-08-11T14:05:00Z","region":"us-west-2",
 "resources":["arn:aws:ec2:us-west-2:123456789012:instance/i-0123456789abcdef0"],"detail":{"instance-id":"i-0123456789abcdef0","state":"STATE"}}`
	health = `{"version":"0","id":"a1b2c3d4-0000-1111-2222-333344445555","detail-type":"AWS Health Event","source":"aws.health",
 "account":"123456789012","time":"2026-08-11T00:00:00Z","region":"us-west-2","resources":["i-0123456789abcdef0"],
 "detail":{"eventArn":"arn:aws:health:us-west-2::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/EXAMPLE",
   "service":"SERVICE","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange",
   "startTime":"START","endTime":"Mon, 24 Aug 2026 02:00:00 GMT",
   "affectedEntities":[{"entityValue":"i-0123456789abcdef0"},{"entityValue":"i-0fedcba9876543210"}]}}`
	reservation = `{"version":"0","id":"0d9e8f7a-6b5c-4d3e-2f1a-0b9c8d7e6f5a","detail-type":"EC2 Capacity Reservation Instance Interruption Warning",
 "source":"aws.ec2","account":"123456789012","time":"2026-08-11T14:00:00Z","region":"us-west-2",
 "resources":[],"detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`
)

func replace(s string, pairs ...string) string { return strings.NewReplacer(pairs...).Replace(s) }

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestConsumer(t *testing.T) {
	const id, other = "i-0123456789abcdef0", "i-0fedcba9876543210"
	retirement := at("2026-08-24T00:00:00Z")
	for _, tc := range []struct {
		name        string
		body        string
		handlerErr  error
		want        []eventbridge.Event
		wantDeleted bool
		malformed   bool
	}{
		{name: "spot interruption", body: spot, wantDeleted: true, want: []eventbridge.Event{{Kind: eventbridge.KindSpotInterruption, InstanceID: id,
			Time: at("2026-08-11T14:00:00Z"), Deadline: at("2026-08-11T14:02:00Z"), MessageID: "1e5527d7-bb36-4607-3370-4164db56a40e"}}},
		{name: "rebalance recommendation", body: rebalance, wantDeleted: true, want: []eventbridge.Event{{Kind: eventbridge.KindRebalanceRecommendation,
			InstanceID: id, Time: at("2026-08-11T13:58:00Z"), MessageID: "12345678-1234-1234-1234-123456789012"}}},
		{name: "shutting down", body: replace(stateChange, "STATE", "shutting-down"), wantDeleted: true, want: []eventbridge.Event{{Kind: eventbridge.KindInstanceTerminating,
			InstanceID: id, Time: at("2026-08-11T14:05:00Z"), Deadline: at("2026-08-11T14:05:00Z"), MessageID: "7bf73129-1428-4cd3-a780-95db273d1602"}}},
		{name: "stopped", body: replace(stateChange, "STATE", "stopped"), wantDeleted: true, want: []eventbridge.Event{{Kind: eventbridge.KindInstanceStopping,
			InstanceID: id, Time: at("2026-08-11T14:05:00Z"), Deadline: at("2026-08-11T14:05:00Z"), MessageID: "7bf73129-1428-4cd3-a780-95db273d1602"}}},
		{name: "running is of no interest", body: replace(stateChange, "STATE", "running"), wantDeleted: true},
		{name: "scheduled change, one event per instance", body: replace(health, "SERVICE", "EC2", "START", "Mon, 24 Aug 2026 00:00:00 GMT"), wantDeleted: true,
			want: []eventbridge.Event{
				{Kind: eventbridge.KindScheduledChange, InstanceID: id, Time: at("2026-08-11T00:00:00Z"), Deadline: retirement, MessageID: "a1b2c3d4-0000-1111-2222-333344445555"},
				{Kind: eventbridge.KindScheduledChange, InstanceID: other, Time: at("2026-08-11T00:00:00Z"), Deadline: retirement, MessageID: "a1b2c3d4-0000-1111-2222-333344445555"}}},
		{name: "health event of another service", body: replace(health, "SERVICE", "RDS", "START", "Mon, 24 Aug 2026 00:00:00 GMT"), wantDeleted: true},
		{name: "capacity reservation interruption", body: reservation, wantDeleted: true, want: []eventbridge.Event{{Kind: eventbridge.KindCapacityReservationInterruption,
			InstanceID: id, Time: at("2026-08-11T14:00:00Z"), Deadline: at("2026-08-11T14:02:00Z"), MessageID: "0d9e8f7a-6b5c-4d3e-2f1a-0b9c8d7e6f5a"}}},
		{name: "unknown source", body: replace(spot, `"aws.ec2"`, `"aws.autoscaling"`), wantDeleted: true},
		{name: "handler fails: kept for redelivery", body: spot, handlerErr: errors.New("api server down"), wantDeleted: false,
			want: []eventbridge.Event{{Kind: eventbridge.KindSpotInterruption, InstanceID: id, Time: at("2026-08-11T14:00:00Z"),
				Deadline: at("2026-08-11T14:02:00Z"), MessageID: "1e5527d7-bb36-4607-3370-4164db56a40e"}}},
		{name: "malformed: not JSON", body: "hello", wantDeleted: true, malformed: true},
		{name: "malformed: not an EventBridge event", body: `{"foo":"bar"}`, wantDeleted: true, malformed: true},
		{name: "malformed: no instance ID", body: replace(spot, `"instance-id":"i-0123456789abcdef0"`, `"instance-id":""`), wantDeleted: true, malformed: true},
		{name: "malformed: bad start time", body: replace(health, "SERVICE", "EC2", "START", "tomorrow"), wantDeleted: true, malformed: true},
		{name: "malformed: detail of the wrong shape", body: replace(rebalance, `{"instance-id":"i-0123456789abcdef0"}`, `["i-0123456789abcdef0"]`), wantDeleted: true, malformed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC))
			emu := emulator.Start(emulator.Options{Clock: clk})
			defer emu.Close()
			cfg, err := tailoraws.SDKConfig(context.Background(), tailoraws.Options{Endpoint: emu.URL(), RetryMaxAttempts: 2, RetryMaxBackoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			client := sqs.NewFromConfig(cfg)
			emu.CreateQueue("tailor-interruptions")
			url, err := interruption.QueueURL(context.Background(), client, "tailor-interruptions")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := emu.SendMessage("tailor-interruptions", tc.body); err != nil {
				t.Fatal(err)
			}
			var (
				mu  sync.Mutex
				got []eventbridge.Event
			)
			metrics := interruption.NewMetrics()
			c, err := interruption.New(interruption.Options{SQS: client, QueueURL: url, Metrics: metrics, WaitTime: time.Second,
				Handler: func(_ context.Context, ev eventbridge.Event) error {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, ev)
					return tc.handlerErr
				}})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := c.Poll(context.Background()); err != nil || n != 1 {
				t.Fatalf("Poll = %d, %v", n, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("handled %+v\nwant %+v", got, tc.want)
			}
			visible, inFlight := emu.QueueDepth("tailor-interruptions")
			if deleted := visible+inFlight == 0; deleted != tc.wantDeleted {
				t.Errorf("deleted = %v, want %v", deleted, tc.wantDeleted)
			}
			if n := testutil.ToFloat64(metrics.Malformed); (n == 1) != tc.malformed {
				t.Errorf("malformed count %v, want malformed=%v", n, tc.malformed)
			}
		})
	}
}

// TestRunSurvivesErrors keeps consuming through a throttled receive and a malformed message.
func TestRunSurvivesErrors(t *testing.T) {
	emu := emulator.Start(emulator.Options{})
	defer emu.Close()
	cfg, _ := tailoraws.SDKConfig(context.Background(), tailoraws.Options{Endpoint: emu.URL(), RetryMaxAttempts: 1})
	client := sqs.NewFromConfig(cfg)
	url := emu.CreateQueue("q")
	emu.Throttle("ReceiveMessage", 1)
	for _, body := range []string{"garbage", spot} {
		if _, err := emu.SendMessage("q", body); err != nil {
			t.Fatal(err)
		}
	}
	handled := make(chan eventbridge.Event, 1)
	c, _ := interruption.New(interruption.Options{SQS: client, QueueURL: url, WaitTime: time.Second, ErrorBackoff: 10 * time.Millisecond,
		Handler: func(_ context.Context, ev eventbridge.Event) error { handled <- ev; return nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	select {
	case ev := <-handled:
		if ev.Kind != eventbridge.KindSpotInterruption {
			t.Errorf("handled %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the spot notice was never handled")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}
