package termination

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/lifecycle/interruption"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
)

// Eviction outcomes, as counted in metrics.
const (
	OutcomeEvicted = "evicted"
	OutcomeBlocked = "blocked_by_pdb"
	OutcomeDeleted = "deleted_past_grace_period"
	OutcomeFailed  = "failed"
)

// evictionsPerNode is how many of one node's pods are evicted at once. Each eviction is one API
// call that waits on the API server's budget check; a node of 100 pods evicted one after another
// would hold its drain (and its worker) for 100 round trips.
const evictionsPerNode = 10

// drain evicts the first group of pods that still has any; later groups wait for it to empty.
// Pods whose deadline has come are deleted instead, with what is left of the grace period. A pod
// that would fit nowhere afterwards (see Placer) is held, not evicted, until it has a place or
// its deadline comes. drain says how soon to look again when a PodDisruptionBudget refused an
// eviction or a pod was held, which only asking again resolves; 0 otherwise.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, claim *karpv1.NodeClaim, pods []*corev1.Pod, deadline *time.Time) (time.Duration, error) {
	groups := drainGroups(pods)
	if len(groups) == 0 {
		return 0, nil // only pods already terminating remain; wait for them
	}
	now := c.opts.Clock.Now()
	group := groups[0]
	held := c.held(ctx, node, claim, group, deadline, now)
	blockedBy := make([]bool, len(group))
	errs := make([]error, len(group))
	workqueue.ParallelizeUntil(ctx, evictionsPerNode, len(group), func(i int) {
		if _, ok := held[group[i].UID]; !ok {
			blockedBy[i], errs[i] = c.evict(ctx, node, group[i], deadline, now)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	var blocked, waiting []string
	for i, p := range group {
		if why, ok := held[p.UID]; ok {
			waiting = append(waiting, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, why))
		} else if blockedBy[i] {
			blocked = append(blocked, p.Namespace+"/"+p.Name)
		}
	}
	var again time.Duration
	if len(waiting) > 0 {
		again = placementRetry
	}
	if len(blocked) > 0 {
		again = evictionBlockedRetry
	}
	if again == 0 || claim == nil {
		return again, nil
	}
	var parts []string
	reason := "EvictionBlocked"
	if len(blocked) > 0 {
		parts = append(parts, fmt.Sprintf("waiting on PodDisruptionBudgets to evict %d pods: %v", len(blocked), truncated(blocked, 5)))
	}
	if len(waiting) > 0 {
		parts = append(parts, fmt.Sprintf("holding the eviction of %d pods that would fit nowhere afterwards: %v", len(waiting), truncated(waiting, 5)))
		if len(blocked) == 0 {
			reason = "AwaitingPlacement"
		}
	}
	msg := strings.Join(parts, "; ")
	if deadline != nil {
		msg += fmt.Sprintf("; pods are deleted regardless from %s", deadline.UTC().Format(time.RFC3339))
	}
	cond := claim.GetCondition(karpv1.ConditionTypeDrained)
	if cond == nil || cond.Reason != reason || cond.Message != msg {
		c.opts.Recorder.Eventf(node, nil, corev1.EventTypeWarning, "FailedDraining", "Drain", "Node %s: %s", node.Name, msg)
	}
	return again, c.setCondition(ctx, claim, karpv1.ConditionTypeDrained, metav1.ConditionFalse, reason, msg)
}

// MaxHold bounds how long a drain holds an eviction for want of a place, counted from the node's
// (or its NodeClaim's) deletion. Without a terminationGracePeriod nothing else would: a pod that can
// never be placed (pinned to the node by a local volume, a host port nothing else offers) would
// keep a node someone deleted by hand, or one that expired, forever. Past it the drain evicts as
// Karpenter does, and the pod waits with the provisioner's reason.
const MaxHold = 15 * time.Minute

// drainingSince is when the node, or else its NodeClaim, was deleted; nil when neither is.
func drainingSince(node *corev1.Node, claim *karpv1.NodeClaim) *time.Time {
	if node.DeletionTimestamp != nil {
		return &node.DeletionTimestamp.Time
	}
	if claim != nil && claim.DeletionTimestamp != nil {
		return &claim.DeletionTimestamp.Time
	}
	return nil
}

// held are the pods of group whose eviction waits for a place, with why (see Placer). Pods the
// deadline makes the drain delete are not asked about, nor are those of an interrupted instance,
// which the cloud takes away whatever the drain does: held there, they would only come back
// later. When the Placer cannot answer, nothing is held: a drain must not stall on a lister or
// cloud error.
func (c *Controller) held(ctx context.Context, node *corev1.Node, claim *karpv1.NodeClaim, group []*corev1.Pod, deadline *time.Time, now time.Time) map[types.UID]string {
	if c.opts.Placer == nil {
		return nil
	}
	if claim != nil && claim.IsTrue(karpv1.ConditionTypeDisruptionReason) && claim.GetCondition(karpv1.ConditionTypeDisruptionReason).Reason == interruption.Method {
		return nil
	}
	if since := drainingSince(node, claim); since != nil && now.Sub(*since) >= MaxHold {
		return nil
	}
	var ask []*corev1.Pod
	for _, p := range group {
		if force, _ := mustDelete(p, deadline, now); !force {
			ask = append(ask, p)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	if out, ok := c.rechecks.recent(node.Name, ask, now); ok {
		return out
	}
	start := c.opts.Clock.Now()
	out, err := c.opts.Placer.Unplaceable(ctx, node.Name, ask)
	logger := klog.FromContext(ctx).WithValues("node", node.Name)
	if err != nil {
		logger.Error(err, "Could not re-check where the pods of a drain would go; evicting")
		return nil
	}
	c.rechecks.keep(node.Name, ask, out, now)
	logger.V(1).Info("Re-checked where the pods of a drain would go", "pods", len(ask), "held", len(out), "took", c.opts.Clock.Since(start))
	for _, p := range ask {
		if why, ok := out[p.UID]; ok {
			logger.Info("Holding an eviction: the pod would fit nowhere afterwards", "pod", klog.KObj(p), "why", why)
		}
	}
	return out
}

// evict removes one pod through the Eviction API, or deletes it if the node's deadline leaves
// no time for its grace period; it reports whether a PodDisruptionBudget refused the eviction.
func (c *Controller) evict(ctx context.Context, node *corev1.Node, p *corev1.Pod, deadline *time.Time, now time.Time) (bool, error) {
	if force, grace := mustDelete(p, deadline, now); force {
		err := c.opts.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		if err != nil && !apierrors.IsNotFound(err) {
			c.count(OutcomeFailed)
			return false, fmt.Errorf("deleting pod %s/%s past node %s's termination grace period: %w", p.Namespace, p.Name, node.Name, err)
		}
		c.count(OutcomeDeleted)
		c.opts.Recorder.Eventf(p, node, corev1.EventTypeWarning, "Disrupted", "Delete",
			"Deleting pod past node %s's termination grace period, regardless of its PodDisruptionBudget", node.Name)
		return false, nil
	}
	err := c.opts.Kube.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
	})
	metrics.EvictionRequested(err)
	switch {
	case err == nil:
		c.count(OutcomeEvicted)
		c.opts.Recorder.Eventf(p, node, corev1.EventTypeNormal, "Evicted", "Evict", "Evicted from node %s, which is being terminated", node.Name)
	case apierrors.IsNotFound(err):
	case apierrors.IsTooManyRequests(err) && c.granted(p):
		if err := c.finishGrantedEviction(ctx, node, p); err != nil {
			c.count(OutcomeFailed)
			return false, err
		}
	case apierrors.IsTooManyRequests(err):
		// A PodDisruptionBudget does not allow it now; try again shortly.
		c.count(OutcomeBlocked)
		return true, nil
	default:
		c.count(OutcomeFailed)
		return false, fmt.Errorf("evicting pod %s/%s from node %s: %w", p.Namespace, p.Name, node.Name, err)
	}
	return false, nil
}

// granted reports whether a budget already counts p as evicted (see grantedEviction).
func (c *Controller) granted(p *corev1.Pod) bool {
	if c.opts.PDBs == nil {
		return false
	}
	pdbs, err := c.opts.PDBs.PodDisruptionBudgets(p.Namespace).List(labels.Everything())
	return err == nil && grantedEviction(p, pdbs)
}

// finishGrantedEviction deletes a pod whose eviction its budget granted and counted, but whose
// delete never happened; the UID precondition keeps a pod recreated under the name safe.
func (c *Controller) finishGrantedEviction(ctx context.Context, node *corev1.Node, p *corev1.Pod) error {
	err := c.opts.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s/%s, whose eviction from node %s its PodDisruptionBudget already granted: %w", p.Namespace, p.Name, node.Name, err)
	}
	if err == nil {
		c.count(OutcomeEvicted)
		klog.FromContext(ctx).Info("Finished an eviction its PodDisruptionBudget had granted", "pod", klog.KObj(p), "node", node.Name)
		c.opts.Recorder.Eventf(p, node, corev1.EventTypeNormal, "Evicted", "Evict",
			"Evicted from node %s, which is being terminated: its PodDisruptionBudget had granted the eviction, whose delete was cut short", node.Name)
	}
	return nil
}

func (c *Controller) count(outcome string) {
	if c.opts.Metrics != nil {
		c.opts.Metrics.Evicted(outcome)
	}
}

// taint puts karpenter.sh/disrupted:NoSchedule on the node so nothing new lands while it drains.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	wrote, err := nodetaint.SetDisrupted(ctx, c.opts.Kube, node, true)
	if err != nil {
		return fmt.Errorf("tainting node %s: %w", node.Name, err)
	}
	if wrote {
		klog.FromContext(ctx).Info("Tainted node for termination", "node", node.Name, "taint", karpv1.DisruptedNoScheduleTaint.ToString())
	}
	return nil
}

// terminateInstance asks the cloud to terminate the node's instance; it is done once the cloud
// says the instance is gone.
func (c *Controller) terminateInstance(ctx context.Context, node *corev1.Node, claim *karpv1.NodeClaim) (bool, error) {
	target := claim
	if target == nil {
		if node.Spec.ProviderID == "" {
			return true, nil
		}
		target = &karpv1.NodeClaim{Status: karpv1.NodeClaimStatus{ProviderID: node.Spec.ProviderID}}
	}
	done := metrics.CloudCall("node.termination", "Delete", c.opts.Cloud)
	err := c.opts.Cloud.Delete(ctx, target)
	done(err)
	if cloud.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("terminating the instance of node %s: %w", node.Name, err)
	}
	klog.FromContext(ctx).Info("Terminating instance", "node", node.Name, "providerID", target.Status.ProviderID)
	if claim != nil {
		_ = c.setCondition(ctx, claim, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, "InstanceTerminating", "")
	}
	return false, nil
}

func (c *Controller) setCondition(ctx context.Context, claim *karpv1.NodeClaim, condType string, status metav1.ConditionStatus, reason, msg string) error {
	fresh, err := c.opts.ClaimLister.Get(claim.Name)
	if err != nil {
		return nil // the claim is gone
	}
	fresh = fresh.DeepCopy()
	if !fresh.SetCondition(condType, status, reason, msg, c.opts.Clock.Now()) {
		return nil
	}
	_, err = c.opts.NodeClaims.UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// removeFinalizer drops Tailor's finalizer from the node, guarded by its resource version. It
// reports false if the node was already gone.
func removeFinalizer(ctx context.Context, kube kubernetes.Interface, node *corev1.Node) (bool, error) {
	finalizers := slices.DeleteFunc(slices.Clone(node.Finalizers), func(f string) bool { return f == karpv1.TerminationFinalizer })
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": node.ResourceVersion}})
	if err != nil {
		return false, err
	}
	_, err = kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func truncated(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(items[:n:n], fmt.Sprintf("and %d more", len(items)-n))
}
