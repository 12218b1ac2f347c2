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
	// inProcess makes Tailor hold the election instead of kube-scheduler's app.Run; see
	// leadThenRun.
	inProcess bool
	// identity names the replica in the Lease; empty means hostname_uuid, as kube-scheduler.
	identity string
	// keepLease leaves the Lease held when ctx ends, as a killed process does.
	keepLease bool
}

// WithReplicaInProcess is for a caller that runs several replicas in one process (the
// sandbox): it names this one in the Lease's holderIdentity, so the caller can tell which leads,
// and makes Tailor hold the election itself, since kube-scheduler's ends the process when it
// stops leading. A production replica, one to a process, keeps kube-scheduler's election: its
// standby serves /healthz, /readyz and /metrics, and losing the Lease ends the process.
func WithReplicaInProcess(id string) RunOption {
	return func(c *runConfig) { c.election.identity, c.election.inProcess = id, true }
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
// everything Tailor keeps is rebuilt from the API server on the way up (see
// docs/design/resilience.md).
func leadThenRun(ctx context.Context, cc *schedulerconfig.CompletedConfig, e election, schedule func(context.Context) error) error {
	if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.CoordinatedLeaderElection) {
		return fmt.Errorf("feature gate %s is not supported by tailor-scheduler; turn it off or set leaderElection.leaderElect: false", kubefeatures.CoordinatedLeaderElection)
	}
	cfg := cc.ComponentConfig.LeaderElection
	id, err := replicaIdentity(e)
	if err != nil {
		return err
	}
	// The lock's own client times out at the renew deadline, so a silent API server cannot hold a
	// renewal past it.
	lock, err := resourcelock.NewFromKubeconfig(cfg.ResourceLock, cfg.ResourceNamespace, cfg.ResourceName,
		resourcelock.ResourceLockConfig{Identity: id}, cc.KubeConfig, cfg.RenewDeadline.Duration)
	if err != nil {
		return fmt.Errorf("leaderElection: building the %s lock %s/%s: %w", cfg.ResourceLock, cfg.ResourceNamespace, cfg.ResourceName, err)
	}
	// The elector has a context of its own, ended only once the scheduler it ran has returned:
	// the Lease is released (ReleaseOnCancel) when the elector stops, and releasing it while the
	// scheduler and Tailor's controllers still wind down would let a standby act beside them.
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	r := &leaderRun{
		ctx: ctx, schedule: schedule, stopElecting: stopElecting,
		logger: klog.FromContext(ctx).WithValues("lease", cfg.ResourceNamespace+"/"+cfg.ResourceName, "identity", id),
		began:  make(chan struct{}), done: make(chan struct{}),
	}
	// Asked to stop while standing by: stop electing at once. While leading, the scheduler's
	// return stops it (see lead).
	stopWatching := context.AfterFunc(ctx, r.stopStandingBy)
	defer stopWatching()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration.Duration,
		RenewDeadline:   cfg.RenewDeadline.Duration,
		RetryPeriod:     cfg.RetryPeriod.Duration,
		ReleaseOnCancel: !e.keepLease,
		Name:            "tailor-scheduler",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: r.lead,
			OnStoppedLeading: func() { r.logger.Info("Stopped leading") },
			OnNewLeader: func(holder string) {
				if holder != id {
					r.logger.Info("Standing by", "leader", holder)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leaderElection: %w", err)
	}
	elector.Run(electCtx)
	return r.outcome()
}

// replicaIdentity names this replica in the Lease: as configured, or hostname_uuid as
// kube-scheduler names it.
func replicaIdentity(e election) (string, error) {
	if e.identity != "" {
		return e.identity, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("naming this replica for leader election: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// leaderRun is one replica's election, from standing by to the scheduler it ran having returned.
type leaderRun struct {
	// ctx is the caller's: its end asks the replica to stop.
	ctx          context.Context
	schedule     func(context.Context) error
	stopElecting context.CancelFunc
	logger       klog.Logger
	// began is closed when this replica starts leading, done when the scheduler it ran returned:
	// OnStartedLeading runs on a goroutine of its own that elector.Run does not wait for.
	began, done chan struct{}

	mu sync.Mutex
	// stopped, once set, keeps a late OnStartedLeading from starting anything.
	stopped bool
	lost    bool
	runErr  error
}

// stopStandingBy stops electing when the caller asks to stop before this replica leads.
func (r *leaderRun) stopStandingBy() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.began:
	default:
		r.stopped = true
		r.stopElecting()
	}
}

// lead runs the scheduler while this replica holds the Lease (OnStartedLeading).
func (r *leaderRun) lead(leading context.Context) {
	defer close(r.done)
	// Whatever ends the scheduler, this replica stops electing: it holds no Lease it does not
	// act on (a scheduler that returned early would otherwise keep the Lease renewed and nothing
	// scheduling).
	defer r.stopElecting()
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	close(r.began)
	r.mu.Unlock()
	runCtx, cancel := context.WithCancel(leading)
	defer cancel()
	stopOnCancel := context.AfterFunc(r.ctx, cancel)
	defer stopOnCancel()
	r.logger.Info("Leading: starting the scheduler and Tailor")
	err := r.schedule(runCtx)
	r.mu.Lock()
	r.runErr, r.lost = err, leading.Err() != nil && r.ctx.Err() == nil
	r.mu.Unlock()
}

// outcome is what leadThenRun returns once the elector has stopped.
func (r *leaderRun) outcome() error {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	select {
	case <-r.began:
		// The elector stops on its own when the Lease is lost; the scheduler is then winding
		// down: no goroutine of this replica may still write once a standby leads.
		<-r.done
	default:
		if r.ctx.Err() != nil {
			return nil // asked to stop while standing by
		}
		return errors.New("leader election ended while standing by")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.ctx.Err() != nil:
		return nil
	case r.lost:
		return errors.Join(ErrLostLease, r.runErr)
	case r.runErr != nil:
		return fmt.Errorf("the scheduler stopped while this replica led: %w", r.runErr)
	default:
		return errors.New("the scheduler stopped while this replica led")
	}
}
