package interruption_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus/testutil"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
)

// burstQueue is an emulator whose queue holds n spot notices for distinct instances, and an SQS
// client to it.
func burstQueue(tb testing.TB, n int) (*emulator.Emulator, *sqs.Client, string) {
	tb.Helper()
	emu := emulator.Start(emulator.Options{})
	tb.Cleanup(emu.Close)
	cfg, err := tailoraws.SDKConfig(context.Background(), tailoraws.Options{Endpoint: emu.URL(), RetryMaxAttempts: 2, RetryMaxBackoff: time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	url := emu.CreateQueue("burst")
	for i := range n {
		body, err := eventbridge.Message(eventbridge.Notice{Kind: eventbridge.KindSpotInterruption, InstanceID: fmt.Sprintf("i-%017x", i)})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := emu.SendMessage("burst", body); err != nil {
			tb.Fatal(err)
		}
	}
	return emu, sqs.NewFromConfig(cfg), url
}

// TestABurstIsInHandAtOnce: two receivers hold sixty notices in the handler at once, MaxInHand
// (each holds until all sixty are there, so this fails if a receiver waits for its batch before
// receiving again), and never more; every notice is handled once, each batch leaves the queue in
// one DeleteMessageBatch, and the queue ends empty.
func TestABurstIsInHandAtOnce(t *testing.T) {
	const notices, receivers, maxInHand = 100, 2, 60
	emu, client, url := burstQueue(t, notices)
	var (
		mu      sync.Mutex
		handled = map[string]int{}
		waiting = 0
		most    = 0
		full    = make(chan struct{})
	)
	metrics := interruption.NewMetrics()
	c, err := interruption.New(interruption.Options{SQS: client, QueueURL: url, Metrics: metrics, WaitTime: time.Second,
		Receivers: receivers, MaxInHand: maxInHand,
		Handler: func(ctx context.Context, ev eventbridge.Event) error {
			mu.Lock()
			handled[ev.InstanceID]++
			waiting++
			most = max(most, waiting)
			if waiting == maxInHand {
				close(full)
			}
			mu.Unlock()
			select {
			case <-full:
			case <-ctx.Done():
			}
			mu.Lock()
			waiting--
			mu.Unlock()
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	select {
	case <-full:
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d notices in the handler at once at most; want %d", most, maxInHand)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if visible, inFlight := emu.QueueDepth("burst"); visible+inFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the queue did not empty within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > maxInHand {
		t.Errorf("%d notices in hand at once; MaxInHand is %d", most, maxInHand)
	}
	for id, n := range handled {
		if n != 1 {
			t.Errorf("notice for %s handled %d times", id, n)
		}
	}
	if len(handled) != notices {
		t.Errorf("%d notices handled, want %d", len(handled), notices)
	}
	if got := testutil.ToFloat64(metrics.Deleted); got != notices {
		t.Errorf("deleted %v messages, want %d", got, notices)
	}
	calls := map[string]int{}
	for _, call := range emu.CallLog() {
		calls[call.Action]++
	}
	if calls["DeleteMessage"] != 0 || calls["DeleteMessageBatch"] != notices/10 {
		t.Errorf("deleted with %d DeleteMessage and %d DeleteMessageBatch calls; want none and %d (one per batch of 10)",
			calls["DeleteMessage"], calls["DeleteMessageBatch"], notices/10)
	}
}

// TestNewRefusesNegativeReceivers: the option is named in the error.
func TestNewRefusesNegativeReceivers(t *testing.T) {
	_, client, url := burstQueue(t, 0)
	_, err := interruption.New(interruption.Options{SQS: client, QueueURL: url, Receivers: -1,
		Handler: func(context.Context, eventbridge.Event) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "Receivers") {
		t.Errorf("New with Receivers -1 = %v, want an error naming Receivers", err)
	}
	_, err = interruption.New(interruption.Options{SQS: client, QueueURL: url, MaxInHand: 5,
		Handler: func(context.Context, eventbridge.Event) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "MaxInHand") {
		t.Errorf("New with MaxInHand 5 = %v, want an error naming MaxInHand", err)
	}
}

// BenchmarkDrain: how fast a burst of 500 notices leaves the queue when each takes 50 ms to
// handle (an API round trip or two), by number of receivers. notices/s is the figure.
func BenchmarkDrain(b *testing.B) {
	for _, receivers := range []int{1, 4, 10} {
		b.Run(fmt.Sprintf("receivers=%d", receivers), func(b *testing.B) {
			const notices = 500
			var total time.Duration
			for range b.N {
				emu, client, url := burstQueue(b, notices)
				c, err := interruption.New(interruption.Options{SQS: client, QueueURL: url, WaitTime: time.Second, Receivers: receivers,
					Handler: func(context.Context, eventbridge.Event) error { time.Sleep(50 * time.Millisecond); return nil }})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				start := time.Now()
				done := make(chan error)
				go func() { done <- c.Run(ctx) }()
				for {
					if visible, inFlight := emu.QueueDepth("burst"); visible+inFlight == 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
				total += time.Since(start)
				cancel()
				if err := <-done; err != nil {
					b.Fatalf("Run = %v", err)
				}
			}
			b.ReportMetric(float64(notices*b.N)/total.Seconds(), "notices/s")
			b.ReportMetric(total.Seconds()/float64(b.N), "s/burst")
		})
	}
}
