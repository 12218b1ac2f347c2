package operator

import (
	"context"
	"fmt"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// eventWritesInFlight bounds the scheduler's Event writes in flight at once (see Setup).
const eventWritesInFlight = 16

// Setup is kube-scheduler's app.Setup with one change: the scheduler's Events are written at
// most eventWritesInFlight at a time. Run uses it; a benchmark that compares kube-scheduler's own
// profile with Tailor's uses it for both, so that only the profile differs.
//
// The events library writes each Event in a goroutine of its own, held back only by the
// client's QPS limiter. When a burst of pods fails to schedule, and again when they are
// nominated and bound, a thousand Events are written at once. The API server allows 100
// streams on one HTTP/2 connection (its default --http2-max-streams-per-connection), and for
// every request beyond them the client dials a new TLS connection; the scheduler's other
// clients share that transport, so a NodeClaim create waited behind hundreds of handshakes, and
// the API server spent its CPU on them. With the cap, Events wait their turn on the one
// connection instead.
func Setup(ctx context.Context, opts *options.Options, registryOptions ...app.Option) (*schedulerserverconfig.CompletedConfig, *scheduler.Scheduler, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, nil, err
	}
	opts.ComponentConfig = cfg
	if errs := opts.Validate(); len(errs) > 0 {
		return nil, nil, utilerrors.NewAggregate(errs)
	}
	c, err := opts.Config(ctx)
	if err != nil {
		return nil, nil, err
	}
	if c.EventBroadcaster, err = capEventWrites(ctx, c.KubeConfig, c.EventBroadcaster); err != nil {
		return nil, nil, err
	}
	cc := c.Complete()
	// Nothing has started the broadcasters yet; on failure nothing will.
	fail := func(err error) (*schedulerserverconfig.CompletedConfig, *scheduler.Scheduler, error) {
		cc.EventBroadcaster.Shutdown()
		return nil, nil, err
	}
	registry := runtime.Registry{}
	for _, add := range registryOptions {
		if err := add(registry); err != nil {
			return fail(err)
		}
	}
	var profiles []config.KubeSchedulerProfile
	sched, err := scheduler.New(ctx, cc.Client, cc.InformerFactory, cc.DynInformerFactory,
		func(name string) events.EventRecorderLogger { return cc.EventBroadcaster.NewRecorder(name) },
		scheduler.WithComponentConfigVersion(cc.ComponentConfig.APIVersion),
		scheduler.WithKubeConfig(cc.KubeConfig),
		scheduler.WithProfiles(cc.ComponentConfig.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cc.ComponentConfig.PercentageOfNodesToScore),
		scheduler.WithFrameworkOutOfTreeRegistry(registry),
		scheduler.WithPodMaxBackoffSeconds(cc.ComponentConfig.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cc.ComponentConfig.PodInitialBackoffSeconds),
		scheduler.WithPodMaxInUnschedulablePodsDuration(cc.PodMaxInUnschedulablePodsDuration),
		scheduler.WithExtenders(cc.ComponentConfig.Extenders...),
		scheduler.WithParallelism(cc.ComponentConfig.Parallelism),
		scheduler.WithBuildFrameworkCapturer(func(p config.KubeSchedulerProfile) { profiles = append(profiles, p) }),
	)
	if err != nil {
		return fail(err)
	}
	if err := options.LogOrWriteConfig(klog.FromContext(ctx), opts.WriteConfigTo, &cc.ComponentConfig, profiles); err != nil {
		return fail(err)
	}
	return &cc, sched, nil
}

// capEventWrites returns the scheduler's broadcaster with its recorders writing through a client
// capped at eventWritesInFlight requests. The scheduler's own broadcaster stays for the legacy
// recorder that leader election was given before this runs.
//
//nolint:staticcheck // SA1019: kube-scheduler's CompletedConfig still carries an EventBroadcasterAdapter.
func capEventWrites(ctx context.Context, kubeConfig *rest.Config, own events.EventBroadcasterAdapter) (events.EventBroadcasterAdapter, error) {
	capped := rest.CopyConfig(kubeConfig)
	capped.Wrap(limitInFlight(eventWritesInFlight))
	client, err := kubernetes.NewForConfig(capped)
	if err != nil {
		return nil, fmt.Errorf("creating the client for the scheduler's Events: %w", err)
	}
	return cappedEvents{EventBroadcasterAdapter: own, capped: events.NewEventBroadcasterAdapterWithContext(ctx, client)}, nil
}

// cappedEvents records through capped and keeps the scheduler's own broadcaster for legacy
// recorders; both are started and shut down together.
//
//nolint:staticcheck // SA1019: see capEventWrites.
type cappedEvents struct {
	events.EventBroadcasterAdapter
	capped events.EventBroadcasterAdapter
}

func (e cappedEvents) NewRecorder(name string) events.EventRecorderLogger {
	return boundedNotes{e.capped.NewRecorder(name)}
}

func (e cappedEvents) StartRecordingToSink(stop <-chan struct{}) {
	e.EventBroadcasterAdapter.StartRecordingToSink(stop)
	e.capped.StartRecordingToSink(stop)
}

func (e cappedEvents) Shutdown() {
	e.EventBroadcasterAdapter.Shutdown()
	e.capped.Shutdown()
}
