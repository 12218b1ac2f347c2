package faults

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// failoverElection are short timings, so a standby takes over in seconds rather than the shipped
// configuration's 15.
var failoverElection = sandbox.LeaderElection{LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}

// newFailoverEnv starts a cluster whose scheduler elects its leader on a Lease, and a standby
// beside it; it returns once the first replica leads.
func newFailoverEnv(t *testing.T) (e *env.Env, leader, standby string) {
	t.Helper()
	e = env.Start(t, nil, nil, func(o *sandbox.Options) { o.LeaderElection = &failoverElection })
	leader = e.Cluster.Replicas()[0]
	e.WaitFor("the first replica to lead", time.Minute, func() (bool, string) {
		holder := leaseHolder(e)
		return holder == leader, "holder " + holder
	})
	standby, err := e.Cluster.StartStandby(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e, leader, standby
}

func leaseHolder(e *env.Env) string {
	lease, err := e.Cluster.Lease(e.Ctx)
	if err != nil || lease.Spec.HolderIdentity == nil {
		return fmt.Sprint(err)
	}
	return *lease.Spec.HolderIdentity
}

// failOver crashes the leader (it keeps the Lease) and waits until the standby holds the Lease.
// The standby must have taken it in one transition, within a lease duration of the crashed
// leader's last renewal as the Lease's own times say, plus what client-go's polling adds: the
// standby sees that renewal up to one retry period (jittered by 1.2) late, and looks once a
// retry period after the lease ran out; a renew deadline covers both and a loaded machine.
func failOver(e *env.Env, leader, standby string) {
	e.T.Helper()
	if err := e.Cluster.Crash(leader); err != nil {
		e.T.Fatalf("crashing %s: %v", leader, err)
	}
	before, err := e.Cluster.Lease(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	if h := *before.Spec.HolderIdentity; h != leader {
		e.T.Fatalf("the Lease is held by %s right after %s crashed; the crash released it or someone else led", h, leader)
	}
	e.WaitFor("the standby to take the Lease", 30*time.Second, func() (bool, string) {
		holder := leaseHolder(e)
		return holder == standby, "holder " + holder
	})
	after, err := e.Cluster.Lease(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	took := after.Spec.AcquireTime.Sub(before.Spec.RenewTime.Time)
	// client-go's standby retries every RetryPeriod jittered by up to 1.2 more: it may see the
	// last renewal one such period late and look again one more after the lease ran out; a
	// second of slack covers the API server's latency on a loaded machine.
	jittered := time.Duration(float64(failoverElection.RetryPeriod) * (1 + leaderelection.JitterFactor))
	limit := failoverElection.LeaseDuration + 2*jittered + time.Second
	e.T.Logf("%s took the Lease from %s %v after its last renewal (transitions %d -> %d)", standby, leader, took.Round(time.Millisecond),
		*before.Spec.LeaseTransitions, *after.Spec.LeaseTransitions)
	if took > limit {
		e.T.Errorf("the standby took the Lease %v after the leader's last renewal; want within %v", took, limit)
	}
	if got := *after.Spec.LeaseTransitions - *before.Spec.LeaseTransitions; got != 1 {
		e.T.Errorf("%d Lease transitions during the failover; want 1", got)
	}
}

// nominationsNow maps the pods of selector that are nominated and not bound to their node.
func nominationsNow(e *env.Env, selector string) map[string]string {
	list, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" {
			out[p.Name] = p.Status.NominatedNodeName
		}
	}
	return out
}

// expectNominationsSettled checks that each nomination the old leader left is honoured (the pod
// runs on that node) or gone (the pod runs elsewhere, or is gone, and no longer names the node).
func expectNominationsSettled(e *env.Env, left map[string]string) {
	e.T.Helper()
	honoured, cleared := 0, 0
	for name, node := range left {
		p, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			cleared++ // the pod is gone, and its nomination with it
		case p.Spec.NodeName == node:
			honoured++
		case p.Spec.NodeName != "" && p.Status.NominatedNodeName != node:
			cleared++
		default:
			e.T.Errorf("pod %s: nominated to %s by the old leader, now on %q and nominated to %q", name, node, p.Spec.NodeName, p.Status.NominatedNodeName)
		}
	}
	e.T.Logf("%d nominations left by the old leader: %d honoured, %d cleared", len(left), honoured, cleared)
}

// expectConverged waits until the fleet is whole: no NodeClaim with two instances, no instance
// without its NodeClaim, no node tainted karpenter.sh/disrupted whose NodeClaim is not being
// deleted, no pending pod nominated to a node that does not exist. A fleet in motion gets the
// timeout to settle; it fails with what was still wrong.
func expectConverged(e *env.Env, timeout time.Duration) {
	e.T.Helper()
	e.WaitFor("the fleet to converge", timeout, func() (bool, string) {
		faults := fleetFaults(e)
		return len(faults) == 0, strings.Join(faults, "; ")
	})
}

func fleetFaults(e *env.Env) []string {
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	pods, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	var faults []string
	byName := map[string]*karpv1.NodeClaim{}
	byProvider := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		c := &claims.Items[i]
		byName[c.Name] = c
		if c.Status.ProviderID != "" {
			byProvider[c.Status.ProviderID] = c
		}
	}
	perClaim := map[string][]string{}
	for _, inst := range e.Cloud.Instances() {
		perClaim[inst.ClaimName] = append(perClaim[inst.ClaimName], inst.ID)
		if _, ok := byName[inst.ClaimName]; !ok {
			faults = append(faults, fmt.Sprintf("instance %s has no NodeClaim (%s is gone)", inst.ID, inst.ClaimName))
		}
	}
	for claim, ids := range perClaim {
		if len(ids) > 1 {
			faults = append(faults, fmt.Sprintf("NodeClaim %s has %d instances %v", claim, len(ids), ids))
		}
	}
	exists := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		exists[n.Name] = true
		if !nodetaint.IsDisrupted(n) || n.DeletionTimestamp != nil {
			continue
		}
		if c, ok := byProvider[n.Spec.ProviderID]; !ok || c.DeletionTimestamp == nil {
			faults = append(faults, fmt.Sprintf("node %s is tainted %s and its NodeClaim is not being deleted", n.Name, karpv1.DisruptedTaintKey))
		}
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" && !exists[p.Status.NominatedNodeName] && !launching(claims.Items, p.Status.NominatedNodeName) {
			faults = append(faults, fmt.Sprintf("pod %s is nominated to %s, which neither exists nor is launching", p.Name, p.Status.NominatedNodeName))
		}
	}
	slices.Sort(faults)
	return faults
}

func launching(claims []karpv1.NodeClaim, node string) bool {
	return slices.ContainsFunc(claims, func(c karpv1.NodeClaim) bool { return c.Status.NodeName == node && c.DeletionTimestamp == nil })
}

// expectEveryNodeHolds fails the test if a node Tailor launched runs no pod of the selector:
// capacity launched twice for the same pods would stand empty.
func expectEveryNodeHolds(e *env.Env, selector string) {
	e.T.Helper()
	pods, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	used := map[string]int{}
	for _, p := range pods.Items {
		used[p.Spec.NodeName]++
	}
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey})
	if err != nil {
		e.T.Fatal(err)
	}
	for _, n := range nodes.Items {
		if used[n.Name] == 0 && n.DeletionTimestamp == nil {
			e.T.Errorf("node %s (%s) runs no pod of %s", n.Name, n.Labels[corev1.LabelInstanceTypeStable], selector)
		}
	}
	e.T.Logf("%d pods of %s on %d nodes", len(pods.Items), selector, len(nodes.Items))
}
