package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/plugins/tailor"
	"github.com/tailor-sh/tailor/pkg/webhook"
)

// RunOption adds to what Run runs beside the scheduler.
type RunOption func(*runConfig)

type runConfig struct {
	webhook  webhook.Options
	election election
	started  func()
}

// WithStarted calls started once Tailor's provisioner and controllers run beside the scheduler.
// A benchmark waits for it, so that what it measures is the steady state and not Tailor's start.
func WithStarted(started func()) RunOption {
	return func(c *runConfig) { c.started = started }
}

// WithWebhook serves the mutating webhook that sets spec.schedulerName to Tailor's profile. It runs
// on every replica, leader or not: the API server calls whichever the Service picks.
func WithWebhook(o webhook.Options) RunOption {
	return func(c *runConfig) { c.webhook = o }
}

// Run is Setup (kube-scheduler's app.Setup with the scheduler's Event writes capped) and
// kube-scheduler's app.Run, with the Tailor plugin registered. With leader election on, the scheduler schedules only while
// this replica holds the Lease, so a standby runs none of Tailor's controllers: they start when
// the scheduler asks for its first pod. One
// replica to a process (production) elects through kube-scheduler's app.Run, whose standby
// serves health and metrics and whose leader ends the process when it loses the Lease; replicas
// in one process (WithReplicaInProcess) elect through leadThenRun. It returns when ctx ends, once
// Tailor's controllers have stopped, or when either side fails or the Lease is lost
// (ErrLostLease).
func Run(ctx context.Context, opts *options.Options, newCloud NewCloudFunc, clk clock.WithTicker, runOpts ...RunOption) error {
	var rc runConfig
	for _, o := range runOpts {
		o(&rc)
	}
	if err := rc.webhook.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	op := New(newCloud, clk)
	cc, sched, err := Setup(ctx, opts, app.WithPlugin(tailor.Name, tailor.NewFactory(op)))
	if err != nil {
		return err
	}
	profile, err := op.profile(cc.ComponentConfig.Profiles)
	if err != nil {
		return err
	}
	stopWebhook, err := serveWebhook(ctx, rc.webhook, profile.SchedulerName, cc.Client, clk, cancel)
	if err != nil {
		return err
	}
	defer func() { _ = stopWebhook() }() // the error is returned below, on the path that gets there
	var (
		once     sync.Once
		startErr error
	)
	// Tailor runs as long as the scheduler does: while this replica leads.
	leadCtx := ctx
	next := sched.NextPod
	sched.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		once.Do(func() {
			op.wg.Go(func() {
				if err := op.Start(leadCtx, profile, int(cc.ComponentConfig.Parallelism)); err != nil {
					startErr = err
					cancel()
					return
				}
				if rc.started != nil {
					rc.started()
				}
			})
		})
		return next(logger)
	}
	schedule := func(ctx context.Context) error {
		leadCtx = ctx
		defer op.wg.Wait()
		// app.Run registers the configuration process-wide and never removes it; a replica in
		// the same process (the sandbox's standby) registers it again when it leads.
		defer configz.Delete("componentconfig")
		return app.Run(ctx, cc, sched)
	}
	if cc.LeaderElection != nil && rc.election.inProcess {
		// app.Run must not elect again: leadThenRun holds the Lease.
		cc.LeaderElection = nil
		cc.ComponentConfig.LeaderElection.LeaderElect = false
		err = leadThenRun(ctx, cc, rc.election, schedule)
	} else {
		err = schedule(ctx)
	}
	stopped := ctx.Err() != nil && !errors.Is(err, ErrLostLease)
	// The port is free again once Run returns, for a scheduler started after this one.
	webhookErr := stopWebhook()
	if startErr != nil {
		return fmt.Errorf("starting Tailor: %w", startErr)
	}
	if webhookErr != nil {
		return webhookErr
	}
	if stopped {
		return nil
	}
	return err
}

// profile returns the completed profile whose framework built the plugin.
func (o *Operator) profile(profiles []config.KubeSchedulerProfile) (*config.KubeSchedulerProfile, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.handle == nil {
		return nil, fmt.Errorf("no scheduler profile enables plugin %s: add it to postFilter and reserve", tailor.Name)
	}
	for i := range profiles {
		if profiles[i].SchedulerName == o.handle.ProfileName() {
			return &profiles[i], nil
		}
	}
	return nil, fmt.Errorf("profile %q not found in the scheduler configuration", o.handle.ProfileName())
}

// serveWebhook serves the webhook, if o enables it, until ctx ends or stop is called; if it fails,
// it calls failed, so the scheduler stops too rather than run without it. stop waits until the
// port is closed and says why the webhook stopped if it failed.
func serveWebhook(ctx context.Context, o webhook.Options, schedulerName string, kube kubernetes.Interface, clk clock.WithTicker, failed func()) (stop func() error, err error) {
	if !o.Enabled() {
		return func() error { return nil }, nil
	}
	srv, err := webhook.NewServer(o, schedulerName, kube, clk)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		err := srv.Run(ctx)
		if err != nil {
			failed()
		}
		done <- err
	}()
	return sync.OnceValue(func() error {
		cancel()
		return <-done
	}), nil
}
