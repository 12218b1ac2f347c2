package sandbox

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/operator"
)

// LeaderElection makes the sandbox's schedulers elect a leader on one Lease, as replicas of
// tailor-scheduler do, with these timings (the shipped 15 s, 10 s and 2 s would make failover
// tests wait). A stop of a replica is a crash: it keeps the Lease until it expires.
type LeaderElection struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// LeaseName and LeaseNamespace name the Lease the sandbox's schedulers elect their leader on:
// the shipped configuration's.
const (
	LeaseName      = "tailor"
	LeaseNamespace = metav1.NamespaceSystem
)

// replica is one running Tailor scheduler.
type replica struct {
	name   string
	cancel context.CancelFunc
	errs   chan error
	// exited is closed when the scheduler returned; err is what it returned.
	exited chan struct{}
	err    error
}

// startScheduler starts one more replica named name; with leader election off it is the only one.
func (c *Cluster) startScheduler(ctx context.Context) error {
	c.replicaSeq++
	name := fmt.Sprintf("tailor-%d", c.replicaSeq)
	schedOpts, err := schedulerOptions(c.dir, name, c.schedKubeconfig, c.tailorArgs, c.election)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &replica{name: name, cancel: cancel, errs: make(chan error, 1), exited: make(chan struct{})}
	c.mu.Lock()
	if c.newCloud != nil {
		c.Cloud = c.newCloud(c.Kube)
	}
	replicaCloud := c.Cloud
	c.mu.Unlock()
	useCloud := func(kubernetes.Interface) (cloud.CloudProvider, error) { return replicaCloud, nil }
	runOpts := []operator.RunOption{operator.WithReplicaInProcess(name), operator.WithLeaseKeptOnStop()}
	// Every replica of tailor-scheduler serves the webhook; the sandbox has one port for it, so
	// only the first replica does.
	if c.webhook != nil && len(c.replicas) == 0 {
		runOpts = append(runOpts, operator.WithWebhook(*c.webhook))
	}
	c.mu.Lock()
	c.replicas = append(c.replicas, r)
	c.mu.Unlock()
	go func() {
		r.err = operator.Run(ctx, schedOpts, useCloud, c.clock, runOpts...)
		close(r.exited)
		r.errs <- r.err
	}()
	return nil
}

// StartStandby starts another replica of Tailor's scheduler beside those running; with
// Options.LeaderElection set it stands by until it holds the Lease. It returns its name, the
// holderIdentity it writes in the Lease.
func (c *Cluster) StartStandby(ctx context.Context) (string, error) {
	if c.election == nil {
		return "", fmt.Errorf("a standby needs Options.LeaderElection: without it two schedulers would both act")
	}
	if err := c.startScheduler(ctx); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replicas[len(c.replicas)-1].name, nil
}

// Replicas names the replicas running now, oldest first.
func (c *Cluster) Replicas() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.replicas {
		out = append(out, r.name)
	}
	return out
}

// Lease reads the Lease the replicas elect their leader on.
func (c *Cluster) Lease(ctx context.Context) (*coordinationv1.Lease, error) {
	return c.Kube.CoordinationV1().Leases(LeaseNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
}

// Crash stops the named replica as a kill would: wherever it is in its work, without releasing
// the Lease. It waits until the replica's goroutines have returned, so nothing it started still
// writes, and returns what the replica returned.
func (c *Cluster) Crash(name string) error {
	c.mu.Lock()
	var r *replica
	for i, x := range c.replicas {
		if x.name == name {
			r = x
			c.replicas = append(c.replicas[:i:i], c.replicas[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	if r == nil {
		return fmt.Errorf("no replica %s runs (running: %v)", name, c.Replicas())
	}
	stopReplica(r)
	return r.err
}

func stopReplica(r *replica) {
	r.cancel()
	select {
	case <-r.exited:
		if r.err != nil {
			klog.Background().V(2).Info("Tailor's scheduler stopped", "replica", r.name, "err", r.err)
		}
	case <-time.After(30 * time.Second):
		klog.Background().Info("Tailor's scheduler did not stop within 30 s", "replica", r.name)
	}
}

// stopScheduler stops every replica.
func (c *Cluster) stopScheduler() {
	c.mu.Lock()
	replicas := c.replicas
	c.replicas = nil
	c.mu.Unlock()
	for _, r := range replicas {
		stopReplica(r)
	}
}

// SchedulerErr reports the exit of the first replica running, if it has exited; nil (blocks
// for ever) when none runs.
func (c *Cluster) SchedulerErr() <-chan error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.replicas) == 0 {
		return nil
	}
	return c.replicas[0].errs
}
