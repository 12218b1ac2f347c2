package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	schedulerconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	kubefeatures "k8s.io/kubernetes/pkg/features"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// election is how this replica takes part in electing the one that schedules.
type election struct {
	// identity names the replica in the Lease; empty means hostname_uuid, as kube-scheduler.
	identity string
	// keepLease leaves the Lease held when ctx ends, as a killed process does.
	keepLease bool
}

// WithLeaderIdentity names this replica in the Lease's holderIdentity, so a caller that runs
// several replicas can tell which one leads.
func WithLeaderIdentity(id string) RunOption {
	return func(c *runConfig) { c.election.identity = id }
}

// WithLeaseKeptOnStop makes a stop behave as a crash: the Lease is not released when ctx ends,
// so a standby takes over only once it expires. The sandbox uses it to test failover.
func WithLeaseKeptOnStop() RunOption {
	return func(c *runConfig) { c.election.keepLease = true }
}

// ErrLostLease is returned by Run when another replica took the Lease while this one led: the
// replica must not go on scheduling, and a restart makes it a standby.
var ErrLostLease = errors.New("lost the leader election Lease")

// leadThenRun runs schedule once this replica holds the Lease that cc's leader election
// configuration names, and until it loses it or ctx ends.
//
// kube-scheduler's own app.Run leads too, but it ends the process with os.Exit when it stops
// leading, even when asked to stop; Tailor's replicas run in one process in the sandbox and its
// deferred clean-ups (the webhook's port) must run, so the election is held here and app.Run is
// called as if leader election were off. The standby is cold: neither the scheduler's informers
// nor Tailor's run until it leads, so nothing of the old leader's memory is shared or guessed at;
// everything Tailor keeps is rebuilt from the API server on the way up (see the README's
// "Failover" section).
func leadThenRun(ctx context.Context, cc *schedulerconfig.CompletedConfig, e election, schedule func(context.Context) error) error {
	if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.CoordinatedLeaderElection) {
		return fmt.Errorf("feature gate %s is not supported by tailor-scheduler; turn it off or set leaderElection.leaderElect: false", kubefeatures.CoordinatedLeaderElection)
	}
	cfg := cc.ComponentConfig.LeaderElection
	id := e.identity
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("naming this replica for leader election: %w", err)
		}
		id = host + "_" + string(uuid.NewUUID())
	}
	// The lock's own client times out at the renew deadline, so a silent API server cannot hold a
	// renewal past it.
	lock, err := resourcelock.NewFromKubeconfig(cfg.ResourceLock, cfg.ResourceNamespace, cfg.ResourceName,
		resourcelock.ResourceLockConfig{Identity: id}, cc.KubeConfig, cfg.RenewDeadline.Duration)
	if err != nil {
		return fmt.Errorf("leaderElection: building the %s lock %s/%s: %w", cfg.ResourceLock, cfg.ResourceNamespace, cfg.ResourceName, err)
	}
	logger := klog.FromContext(ctx).WithValues("lease", cfg.ResourceNamespace+"/"+cfg.ResourceName, "identity", id)
	// began is closed when this replica starts leading, done when the scheduler it ran returned:
	// OnStartedLeading runs on a goroutine of its own that elector.Run does not wait for.
	// stopped, once set, keeps a late OnStartedLeading from starting anything.
	began, done := make(chan struct{}), make(chan struct{})
	var (
		mu      sync.Mutex
		stopped bool
		runErr  error
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration.Duration,
		RenewDeadline:   cfg.RenewDeadline.Duration,
		RetryPeriod:     cfg.RetryPeriod.Duration,
		ReleaseOnCancel: !e.keepLease,
		Name:            "tailor-scheduler",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				defer close(done)
				mu.Lock()
				if stopped {
					mu.Unlock()
					return
				}
				close(began)
				mu.Unlock()
				logger.Info("Leading: starting the scheduler and Tailor")
				runErr = schedule(ctx)
			},
			OnStoppedLeading: func() { logger.Info("Stopped leading") },
			OnNewLeader: func(holder string) {
				if holder != id {
					logger.Info("Standing by", "leader", holder)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leaderElection: %w", err)
	}
	elector.Run(ctx)
	mu.Lock()
	stopped = true
	mu.Unlock()
	select {
	case <-began:
		// elector.Run cancelled the scheduler's context on its way out; let it wind down, so no
		// goroutine of this replica still writes once a standby leads.
		<-done
	default:
		return nil // asked to stop while standing by
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.Join(ErrLostLease, runErr)
}
