package operator

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/plugins/tailor"
)

// Run is kube-scheduler's own Setup and Run with the Tailor plugin registered. Tailor's
// controllers start when the scheduler asks for its first pod: the scheduler does that only once
// it leads, so a standby replica runs neither the scheduler nor the controllers. It returns when
// ctx ends or either side fails.
func Run(ctx context.Context, opts *options.Options, newCloud NewCloudFunc, clk clock.WithTicker) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	op := New(newCloud, clk)
	cc, sched, err := app.Setup(ctx, opts, app.WithPlugin(tailor.Name, tailor.NewFactory(op)))
	if err != nil {
		return err
	}
	profile, err := op.profile(cc.ComponentConfig.Profiles)
	if err != nil {
		return err
	}
	var (
		once     sync.Once
		startErr error
	)
	next := sched.NextPod
	sched.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		once.Do(func() {
			go func() {
				if err := op.Start(ctx, profile, int(cc.ComponentConfig.Parallelism)); err != nil {
					startErr = err
					cancel()
				}
			}()
		})
		return next(logger)
	}
	err = app.Run(ctx, cc, sched)
	if startErr != nil {
		return fmt.Errorf("starting Tailor: %w", startErr)
	}
	if ctx.Err() != nil {
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
