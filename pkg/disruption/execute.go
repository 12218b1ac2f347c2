package disruption

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// execute carries out a command: wait out the validation period, close the nodes to the
// scheduler and re-check, launch the replacements, taint the nodes, wait for the replacements to
// initialize, then delete the NodeClaims, whose termination drains the nodes through the
// Eviction API. If a replacement fails the nodes are untainted, reopened and kept. It reports
// whether the nodes are on their way out.
// parallelWrites is how many of a command's nodes are marked, or their NodeClaims deleted, at
// once. One at a time, an Empty command of 100 nodes took 140 s to mark and delete on a loaded
// sandbox (make bench-scale at 4,000 pods); client-go's rate limiter still paces the requests.
const parallelWrites = 16

// notReached are n errors for the candidates a parallel pass has not reached: ParallelizeUntil
// stops handing out work when its context ends.
func notReached(n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = errors.New("not reached: the disruption was stopped")
	}
	return errs
}

// execute carries out a decision: it waits the validation period, closes the nodes to the
// scheduler, re-checks the decision on a fresh read, launches and marks, waits for the
// replacements, then removes the candidates. It reports whether any node was removed.
func (c *Controller) execute(ctx context.Context, cmd *Command) (bool, error) {
	logger := klog.FromContext(ctx).WithValues("method", cmd.Method, "reason", cmd.Reason, "nodes", cmd.Nodes())
	logger.V(1).Info("Disruption decided; validating", "decision", cmd.Decision(), "savingsPerHour", cmd.Savings)
	if cmd.Reason != karpv1.DisruptionReasonDrifted && c.opts.ValidationPeriod > 0 {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-c.opts.Clock.After(c.opts.ValidationPeriod):
		}
	}
	nodes := cmd.Nodes()
	// From here on the scheduler cannot reserve a pod onto these nodes; the state read next sees
	// every pod that it reserved before.
	c.opts.Gate.Close(nodes)
	keep := true
	defer func() {
		if keep {
			c.opts.Gate.Reopen(nodes)
		}
	}()
	s, err := c.readState(ctx)
	if err != nil {
		return false, err
	}
	fresh, why := c.validate(ctx, s, cmd)
	if fresh == nil {
		metrics.DisruptionValidationFailures.WithLabelValues(string(cmd.Reason)).Inc()
		metrics.FailedValidation(cmd.Method)
		logger.Info("Disruption abandoned: the re-check disagreed", "why", why)
		return false, nil
	}
	cmd = fresh
	logger.Info(cmd.String(), "decision", cmd.Decision())
	created, err := c.launch(ctx, cmd)
	if err != nil {
		c.withdraw(ctx, created)
		return false, err
	}
	if err := c.mark(ctx, cmd); err != nil {
		c.unmark(ctx, cmd.Candidates)
		c.withdraw(ctx, created)
		return false, err
	}
	if err := c.waitInitialized(ctx, created); err != nil {
		logger.Info("Replacement failed; keeping the nodes", "err", err.Error())
		c.unmark(ctx, cmd.Candidates)
		c.withdraw(ctx, created)
		for _, cand := range cmd.Candidates {
			c.event(cand, corev1.EventTypeWarning, ReasonFailed, fmt.Sprintf("Keeping the node: %v", err))
		}
		return false, nil
	}
	keep = false // the nodes stay closed until they are gone (reopenVanished)
	return c.removeCandidates(ctx, cmd)
}

// removeCandidates deletes the command's NodeClaims once its replacements are up. A candidate
// whose NodeClaim could not be deleted stays: untainted, open, and free to be decided on again.
// It reports whether any was removed.
func (c *Controller) removeCandidates(ctx context.Context, cmd *Command) (bool, error) {
	errs := notReached(len(cmd.Candidates))
	workqueue.ParallelizeUntil(ctx, parallelWrites, len(cmd.Candidates), func(i int) {
		cand := cmd.Candidates[i]
		errs[i] = nil
		if err := c.opts.NodeClaims.Delete(ctx, cand.Claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs[i] = fmt.Errorf("deleting NodeClaim %s: %w", cand.Claim.Name, err)
			return
		}
		c.terminating(cand, cmd)
		metrics.DisruptionDecisions.WithLabelValues(cmd.Decision(), cmd.Method, string(cmd.Reason), cand.Pool.Name).Inc()
		metrics.VoluntaryDecision(cmd.Decision(), cmd.Method, string(cmd.Reason), cand.Pool.Name)
		policy := "" // Karpenter names the pool's policy for consolidation only
		if metrics.ConsolidationType(cmd.Method) != "" {
			policy = string(cand.Pool.Spec.Disruption.ConsolidationPolicy)
		}
		metrics.NodeClaimDisrupted(cand.Claim, string(cmd.Reason), policy)
	})
	var failed []*Candidate
	for i, err := range errs {
		if err != nil {
			failed = append(failed, cmd.Candidates[i])
		}
	}
	if len(failed) > 0 {
		c.unmark(ctx, failed)
		reopen := make([]string, len(failed))
		for i, cand := range failed {
			reopen[i] = cand.Node.Name
		}
		c.opts.Gate.Reopen(reopen)
	}
	if len(failed) < len(cmd.Candidates) {
		metrics.DisruptionSavings.WithLabelValues(string(cmd.Reason)).Add(max(0, cmd.Savings))
	}
	return len(failed) < len(cmd.Candidates), errors.Join(errs...)
}

// withdraw deletes replacements of a command that is abandoned, so they do not launch for
// nothing; one that cannot be deleted now comes up empty and is removed as such.
func (c *Controller) withdraw(ctx context.Context, claims []string) {
	for _, name := range claims {
		if err := c.opts.NodeClaims.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Withdrawing the replacement of an abandoned disruption", "nodeClaim", name)
		}
	}
}

// validate re-derives the command from the state as it is now, with its nodes closed: each must
// still be a candidate for the same reason, the budgets must still allow it, and the simulation
// must still agree (the replacement is the one planned now, not the one planned before).
func (c *Controller) validate(ctx context.Context, s *State, cmd *Command) (*Command, string) {
	mine := setOf(cmd.Nodes())
	others := map[string]bool{}
	for _, n := range c.opts.Gate.Closed() {
		if !mine[n] {
			others[n] = true
		}
	}
	gang := cmd.Method == methodGangDrift
	cands, blocked := candidates(s, others, gang)
	byNode := map[string]*Candidate{}
	for _, cand := range cands {
		byNode[cand.Node.Name] = cand
	}
	var now []*Candidate
	for _, old := range cmd.Candidates {
		cand := byNode[old.Node.Name]
		if cand == nil {
			return nil, fmt.Sprintf("node %s is no longer a candidate: %s", old.Node.Name, blocked[old.Node.Name])
		}
		if cmd.Reason == karpv1.DisruptionReasonDrifted && !gang && !cand.Drifted() {
			return nil, fmt.Sprintf("node %s is no longer drifted", cand.Node.Name)
		}
		if cmd.Reason != karpv1.DisruptionReasonDrifted && !cand.Consolidatable() {
			return nil, fmt.Sprintf("node %s is no longer consolidatable: its pods changed", cand.Node.Name)
		}
		if cmd.Reason == karpv1.DisruptionReasonEmpty && len(cand.Pods) > 0 {
			return nil, fmt.Sprintf("node %s is no longer empty", cand.Node.Name)
		}
		now = append(now, cand)
	}
	if gang {
		// A gang's nodes go all together or not at all: the group must be the same as decided.
		if why := sameGroup(s, now, cands); why != "" {
			return nil, why
		}
	}
	b, _, _ := poolBudgets(s, others)
	per := map[string]int{}
	for _, cand := range now {
		per[cand.Pool.Name]++
	}
	for pool, n := range per {
		// The command's own nodes are left out of the closed nodes counted, as they were when
		// it was decided.
		if left := b.left(pool, cmd.Reason); left < n {
			return nil, fmt.Sprintf("NodePool %s's budget allows %d disruptions for %s now, the command needs %d", pool, left, cmd.Reason, n)
		}
	}
	switch cmd.Reason {
	case karpv1.DisruptionReasonEmpty:
		return &Command{Reason: cmd.Reason, Method: cmd.Method, Candidates: now, Savings: priceOf(now)}, ""
	case karpv1.DisruptionReasonDrifted:
		out := simulate(ctx, c.opts.Planner, s, now)
		if !out.OK() {
			return nil, out.Unplaceable
		}
		return &Command{Reason: cmd.Reason, Method: cmd.Method, Candidates: now, Replacements: out.Replacements,
			Savings: priceOf(now) - replacementPrice(out.Replacements)}, ""
	}
	d := &decider{state: s, probe: newProber(s, c.opts.Planner), spotMin: max(1, c.opts.SpotToSpotMin)}
	spot := len(now) == 1 && now[0].CapacityType() == karpv1.CapacityTypeSpot
	fresh := d.consolidate(ctx, now, cmd.Method, spot)
	if fresh == nil {
		return nil, "the pods no longer fit elsewhere, or no cheaper replacement holds them"
	}
	return fresh, ""
}

// launch creates the replacement NodeClaims and tells the provisioner which pods they are for.
func (c *Controller) launch(ctx context.Context, cmd *Command) ([]string, error) {
	var names []string
	for _, r := range cmd.Replacements {
		claim, err := c.opts.NodeClaims.Create(ctx, planner.NewNodeClaim(r), metav1.CreateOptions{})
		if err != nil {
			return names, fmt.Errorf("creating the replacement NodeClaim in NodePool %s: %w", r.NodePool.Name, err)
		}
		metrics.NodeClaimsCreated.WithLabelValues(r.NodePool.Name, "disruption").Inc()
		metrics.NodeClaimCreated(r.NodePool.Name, string(cmd.Reason), claim.Annotations[planner.MinValuesRelaxedAnnotationKey] == "true")
		c.opts.Gate.Adopt(claim.Name, r.Pods)
		names = append(names, claim.Name)
		c.launching(claim, cmd)
		klog.FromContext(ctx).Info("Launching replacement", "nodeClaim", claim.Name, "nodePool", r.NodePool.Name,
			"cheapest", r.Options[0].InstanceType.Name, "pricePerHour", r.Options[0].Offering.PricePerHour, "pods", len(r.Pods))
	}
	return names, nil
}

// waitInitialized waits until every replacement is Initialized; it fails when one is deleted
// (its launch failed) or the timeout passes.
func (c *Controller) waitInitialized(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var failed error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, c.opts.ReplacementTimeout, true, func(context.Context) (bool, error) {
		for _, name := range names {
			claim, err := c.opts.ClaimLister.Get(name)
			if err != nil || claim.DeletionTimestamp != nil {
				failed = fmt.Errorf("replacement NodeClaim %s went away before it initialized", name)
				return false, failed
			}
			if !claim.IsTrue(karpv1.ConditionTypeInitialized) {
				return false, nil
			}
		}
		return true, nil
	})
	if failed != nil {
		return failed
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("replacement NodeClaims %v did not initialize within %s", names, c.opts.ReplacementTimeout)
	}
	return err
}

// mark records the reason on each claim and taints each node, waiting until the informers show
// the taint: the provisioner then counts the nodes' pods on their replacements.
func (c *Controller) mark(ctx context.Context, cmd *Command) error {
	errs := notReached(len(cmd.Candidates))
	workqueue.ParallelizeUntil(ctx, parallelWrites, len(cmd.Candidates), func(i int) {
		cand := cmd.Candidates[i]
		errs[i] = nil
		if err := c.setReason(ctx, cand.Claim.Name, cmd); err != nil {
			errs[i] = fmt.Errorf("recording the disruption reason of NodeClaim %s: %w", cand.Claim.Name, err)
			return
		}
		if err := c.setTaint(ctx, cand.Node.Name, true); err != nil {
			errs[i] = fmt.Errorf("tainting node %s %s: %w", cand.Node.Name, karpv1.DisruptedTaintKey, err)
		}
	})
	return errors.Join(errs...)
}

// unmark undoes mark for each candidate, whatever fails for another: the taint first, then the
// reason, so that a node is never left tainted without the reason that says whose taint it is.
// What it cannot undo it logs; recoverAbandoned undoes it at the next start.
func (c *Controller) unmark(ctx context.Context, cands []*Candidate) {
	for _, cand := range cands {
		if err := c.setTaint(ctx, cand.Node.Name, false); err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Could not untaint the node of an abandoned disruption", "node", cand.Node.Name)
			continue
		}
		if err := c.clearReason(ctx, cand.Claim.Name); err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Could not clear the disruption reason of an abandoned disruption", "nodeClaim", cand.Claim.Name)
		}
	}
}

// setTaint puts karpenter.sh/disrupted on the node or takes it off, from a fresh read, and waits
// until the informers show it.
func (c *Controller) setTaint(ctx context.Context, name string, on bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := c.opts.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		_, err = nodetaint.SetDisrupted(ctx, c.opts.Kube, node, on)
		return err
	})
	if err == nil {
		nodetaint.WaitVisible(ctx, c.opts.Nodes, name, on)
	}
	return err
}

func (c *Controller) setReason(ctx context.Context, name string, cmd *Command) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claim, err := c.opts.NodeClaims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !claim.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, string(cmd.Reason), cmd.String(), c.opts.Clock.Now()) {
			return nil
		}
		_, err = c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		return err
	})
}

func (c *Controller) event(cand *Candidate, kind, reason, msg string) {
	if c.opts.Recorder == nil {
		return
	}
	for _, obj := range []runtime.Object{cand.Node, apis.ForEvents(cand.Claim)} {
		c.opts.Recorder.Eventf(obj, nil, kind, reason, "Disrupt", "%s", msg)
	}
}
