package aws

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/aws/nodeclass"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/controllers"
)

var _ controllers.Provider = (*Provider)(nil)

// Controllers implements controllers.Provider: the EC2NodeClass status controller, and for a host
// that gives its informers, the cache the provider reads EC2NodeClasses from (nodeclasscache.go).
// (The interruption queue is consumed through HandleInterruptions.) Every call returns the same
// controllers, and each runs at most once at a time, so a host that starts them twice (the
// sandbox and the operator, say) does not double the AWS calls or the status writes.
func (p *Provider) Controllers(deps controllers.Deps) []cloud.Runnable {
	p.controllersOnce.Do(func() {
		p.controllers = []cloud.Runnable{&single{name: "ec2nodeclass", run: func(ctx context.Context) error {
			c, err := nodeclass.New(nodeclass.Options{Clients: deps.Clients, Resolve: p.resolveStatus, Clock: tickerClock(p.opts.Clock),
				ReservationInterval: p.opts.CapacityReservationRefreshInterval,
				Hash:                func(nc *awsv1.EC2NodeClass) (string, string) { return NodeClassHash(nc), NodeClassHashVersion }})
			if err != nil {
				return err
			}
			return c.Run(ctx)
		}}}
	})
	// The EC2NodeClass cache comes with a host that has informers to give (the operator), whoever
	// asked first: a test or the CLI may run the status controller itself, without them. It is
	// made anew for another host's informers (a replica that leads after another, in a sandbox
	// whose replicas share one provider): the last one's stopped with its leadership.
	if deps.Informers == nil {
		return p.controllers
	}
	p.mu.Lock()
	if p.classCacheFor != deps.Informers {
		p.classCacheFor, p.classCache = deps.Informers, &single{name: "ec2nodeclass-cache", run: p.nodeClassCache(deps.Informers)}
	}
	cacheCtrl := p.classCache
	p.mu.Unlock()
	return append(slices.Clone(p.controllers), cacheCtrl)
}

// resolveStatus is the status controller's view: a fresh resolution, never the launch cache, so
// that what the status says is what AWS says now.
func (p *Provider) resolveStatus(ctx context.Context, nc *awsv1.EC2NodeClass) (*awsv1.EC2NodeClass, error) {
	res, err := p.resolver.Resolve(ctx, nc)
	if err != nil {
		return nil, err
	}
	return res.NodeClass, nil
}

// consumeInterruptions finds the queue (retrying while it does not exist yet: it is made by
// infrastructure code that may run after Tailor starts) and consumes it until ctx ends.
func (p *Provider) consumeInterruptions(ctx context.Context, handle interruption.Handler) error {
	logger := klog.FromContext(ctx).WithValues("queue", p.opts.InterruptionQueue)
	client := sqs.NewFromConfig(p.cfg)
	var url string
	for {
		var err error
		if url, err = interruption.QueueURL(ctx, client, p.opts.InterruptionQueue); err == nil {
			break
		}
		logger.Error(err, "Interruption queue not reachable; retrying in 30s")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(30 * time.Second):
		}
	}
	c, err := interruption.New(interruption.Options{SQS: client, QueueURL: url, Handler: handle, Metrics: InterruptionMetrics()})
	if err != nil {
		return err
	}
	logger.Info("Consuming interruption notices", "url", url)
	return c.Run(ctx)
}

// InterruptionMetrics are the SQS consumer's counters (messages received by kind, deleted,
// malformed), registered once per process with the scheduler's other metrics, however many
// providers (tests) there are.
var InterruptionMetrics = sync.OnceValue(func() *interruption.Metrics {
	m := interruption.NewMetrics()
	for _, c := range m.Collectors() {
		_ = legacyregistry.Registerer().Register(c)
	}
	return m
})

// single runs a loop at most once at a time; a second Run while the first is running returns at
// once.
type single struct {
	name    string
	run     func(ctx context.Context) error
	running atomic.Bool
}

func (s *single) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		klog.FromContext(ctx).V(2).Info("AWS controller already running; not starting it twice", "controller", s.name)
		return nil
	}
	defer s.running.Store(false)
	if err := s.run(ctx); err != nil {
		return fmt.Errorf("%s controller: %w", s.name, err)
	}
	return nil
}

// tickerClock is the provider's clock if it can also make tickers (fake clocks in tests can), so
// the status controller's requeues follow test time; real time otherwise.
func tickerClock(c clock.Clock) clock.WithTicker {
	if t, ok := c.(clock.WithTicker); ok {
		return t
	}
	return clock.RealClock{}
}
