// Package interruption consumes the EventBridge notices EC2 sends through an SQS queue (spot
// interruption warnings, rebalance recommendations, AWS Health scheduled changes, instance state
// changes) and hands each one, typed, to a handler. A message leaves the queue only once its
// events were handled, so a handler failure or a crash means redelivery, never a lost notice.
package interruption

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// Handler acts on one event. Returning an error leaves the message on the queue, to be
// delivered again once its visibility timeout passes.
type Handler func(ctx context.Context, ev eventbridge.Event) error

// Metrics count what the consumer sees. The caller registers them (Collectors), so tests and
// several consumers never fight over a global registry.
type Metrics struct {
	Received  *prometheus.CounterVec
	Deleted   prometheus.Counter
	Malformed prometheus.Counter
}

// NewMetrics returns unregistered counters.
func NewMetrics() *Metrics {
	return &Metrics{
		Received: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tailor", Subsystem: "interruption",
			Name: "received_messages_total", Help: "Interruption queue messages received, by the kind of event they carry."}, []string{"kind"}),
		Deleted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tailor", Subsystem: "interruption",
			Name: "deleted_messages_total", Help: "Interruption queue messages deleted after handling."}),
		Malformed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tailor", Subsystem: "interruption",
			Name: "malformed_messages_total", Help: "Interruption queue messages that could not be read; they are deleted."}),
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Received, m.Deleted, m.Malformed}
}

// Options configure a Consumer. SQS, QueueURL and Handler are required.
type Options struct {
	SQS      *sqs.Client
	QueueURL string
	Handler  Handler
	Metrics  *Metrics
	// WaitTime is the long-poll wait (20 s, the SQS maximum, when zero); Visibility is how long a
	// received message stays hidden while it is handled (60 s when zero). Karpenter's 20 s is
	// shorter than handling a notice can take here (the wait for the replacement's plan alone
	// may take up to 30 s in a storm), and a notice still in hand would be delivered again.
	WaitTime   time.Duration
	Visibility time.Duration
	// ErrorBackoff is the pause after a failed receive (1 s when zero), so an outage is not a
	// busy loop.
	ErrorBackoff time.Duration
	// Receivers is how many long polls run at once (10 when zero). A receiver hands each batch
	// it receives (up to 10 messages) to handlers of its own and receives again at once, so a
	// storm is in hand within seconds, up to MaxInHand messages, however long each notice takes.
	// Notices in hand together share the provisioner's plan passes, which is what a storm waits
	// on: when a receiver waited for its batch to be done before receiving again, 10 receivers
	// held 100 notices, and a 500-notice storm deleted its claims over 4.6 minutes, past their
	// 2-minute deadlines (with 4, 40 in hand, in waves of about 28 per pass).
	Receivers int
	// MaxInHand bounds the messages received and not yet done with (1,000 when zero): past it,
	// the receivers wait for handlers to finish before they receive more.
	MaxInHand int
}

// Consumer long-polls the queue and dispatches its messages.
type Consumer struct {
	opts Options
}

// New validates the options.
func New(opts Options) (*Consumer, error) {
	if opts.SQS == nil || opts.QueueURL == "" || opts.Handler == nil {
		return nil, fmt.Errorf("interruption consumer needs an SQS client, a queue URL and a handler")
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.WaitTime == 0 {
		opts.WaitTime = 20 * time.Second
	}
	if opts.Visibility == 0 {
		opts.Visibility = 60 * time.Second
	}
	if opts.ErrorBackoff == 0 {
		opts.ErrorBackoff = time.Second
	}
	if opts.Receivers == 0 {
		opts.Receivers = 10
	}
	if opts.Receivers < 0 {
		return nil, fmt.Errorf("interruption consumer: Receivers is %d; it must be at least 1", opts.Receivers)
	}
	if opts.MaxInHand == 0 {
		opts.MaxInHand = 1000
	}
	if opts.MaxInHand < maxBatch {
		return nil, fmt.Errorf("interruption consumer: MaxInHand is %d; it must be at least %d, one receive's worth", opts.MaxInHand, maxBatch)
	}
	return &Consumer{opts: opts}, nil
}

// QueueURL resolves a queue name (what users configure) to its URL.
func QueueURL(ctx context.Context, client *sqs.Client, name string) (string, error) {
	out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("finding interruption queue %q: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// maxBatch is the most messages one ReceiveMessage returns.
const maxBatch = 10

// Run polls with Receivers long polls at once until ctx ends, and returns once they and the
// handlers of every message received have. Receive errors are logged and retried after a
// pause; nothing a message contains can stop it.
func (c *Consumer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("queue", c.opts.QueueURL)
	inHand := semaphore.NewWeighted(int64(c.opts.MaxInHand))
	var receivers, handlers sync.WaitGroup
	for range c.opts.Receivers {
		receivers.Go(func() {
			for ctx.Err() == nil {
				// Room for a whole batch first: a message received with no room to hold it would
				// sit hidden, unhandled, until its visibility timeout ran out.
				if inHand.Acquire(ctx, maxBatch) != nil {
					return
				}
				ms, err := c.receive(ctx)
				if unused := maxBatch - len(ms); unused > 0 {
					inHand.Release(int64(unused))
				}
				if len(ms) > 0 {
					handlers.Go(func() {
						defer inHand.Release(int64(len(ms)))
						c.finish(ctx, ms)
					})
				}
				if err != nil && ctx.Err() == nil {
					logger.Error(err, "receiving interruption messages; retrying")
					select {
					case <-ctx.Done():
					case <-time.After(c.opts.ErrorBackoff):
					}
				}
			}
		})
	}
	receivers.Wait()
	handlers.Wait()
	return nil
}

// Poll receives one batch (up to 10 messages, long-polling), handles its messages in parallel,
// and deletes the ones it is done with in one DeleteMessageBatch, before it returns. It returns
// how many messages it received.
func (c *Consumer) Poll(ctx context.Context) (int, error) {
	ms, err := c.receive(ctx)
	if err != nil {
		return 0, err
	}
	c.finish(ctx, ms)
	return len(ms), nil
}

// receive long-polls for one batch.
func (c *Consumer) receive(ctx context.Context) ([]sqstypes.Message, error) {
	out, err := c.opts.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(c.opts.QueueURL),
		MaxNumberOfMessages: maxBatch,
		WaitTimeSeconds:     int32(c.opts.WaitTime / time.Second),
		VisibilityTimeout:   int32(c.opts.Visibility / time.Second),
	})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// finish handles a batch's messages in parallel and deletes the ones it is done with in one
// DeleteMessageBatch.
func (c *Consumer) finish(ctx context.Context, ms []sqstypes.Message) {
	done := make([]bool, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { done[i] = c.handle(ctx, m) })
	}
	wg.Wait()
	var finished []sqstypes.Message
	for i, m := range ms {
		if done[i] {
			finished = append(finished, m)
		}
	}
	// Handled is handled: the deletion goes ahead even if the consumer is stopping (losing the
	// lease, say), so the next leader does not work the same notices again.
	deleteCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	c.delete(deleteCtx, finished)
}

// handle parses and dispatches one message, and says whether it is done with: handled, of no
// interest, or unreadable (a malformed message would otherwise come back forever). A message
// whose handling failed stays on the queue, to be delivered again.
func (c *Consumer) handle(ctx context.Context, m sqstypes.Message) bool {
	logger := klog.FromContext(ctx).WithValues("messageID", aws.ToString(m.MessageId))
	events, err := eventbridge.Parse(aws.ToString(m.Body))
	if err != nil {
		c.opts.Metrics.Malformed.Inc()
		logger.Error(err, "deleting an interruption message that cannot be read")
		return true
	}
	var failed error
	for _, ev := range events {
		c.opts.Metrics.Received.WithLabelValues(string(ev.Kind)).Inc()
		metrics.InterruptionReceived(string(ev.Kind), ev.Time, time.Now())
		if err := c.opts.Handler(ctx, ev); err != nil {
			failed = errors.Join(failed, fmt.Errorf("%s for %s: %w", ev.Kind, ev.InstanceID, err))
		}
	}
	if failed != nil {
		logger.Error(failed, "handling an interruption message failed; it stays on the queue to be retried")
		return false
	}
	return true
}

// delete removes the messages from the queue, in one call (a batch holds at most 10, as a
// receive does). A message that could not be deleted was handled but is still queued: it will
// be handled again, which handlers must tolerate anyway (copies of a notice do nothing twice).
func (c *Consumer) delete(ctx context.Context, ms []sqstypes.Message) {
	if len(ms) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(ms))
	for i, m := range ms {
		entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
	}
	out, err := c.opts.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(c.opts.QueueURL), Entries: entries})
	if err != nil {
		logger.Error(err, "deleting handled interruption messages", "messages", len(ms))
		return
	}
	for _, f := range out.Failed {
		i, _ := strconv.Atoi(aws.ToString(f.Id))
		if i >= 0 && i < len(ms) {
			logger.Error(fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message)), "deleting a handled interruption message",
				"messageID", aws.ToString(ms[i].MessageId))
		}
	}
	c.opts.Metrics.Deleted.Add(float64(len(out.Successful)))
	metrics.InterruptionDeleted(len(out.Successful))
}
