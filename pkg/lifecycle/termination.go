package lifecycle

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// finalize lets a deleted NodeClaim go only once nothing is left of it. A registered claim
// deletes its Node, and the termination controller drains the node and terminates the instance;
// a claim without a node terminates its instance itself. Either way the finalizer is dropped
// last, once the cloud says the instance is gone, so nothing leaks.
func (c *Controller) finalize(ctx context.Context, claim *karpv1.NodeClaim) (time.Duration, error) {
	if !hasFinalizer(claim.Finalizers, karpv1.TerminationFinalizer) {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("nodeClaim", claim.Name)
	node, err := c.nodeForClaim(claim)
	if err != nil {
		return 0, err
	}
	if node != nil {
		if node.DeletionTimestamp == nil {
			if err := c.opts.Kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return 0, err
			}
			logger.Info("Deleting node of deleted NodeClaim", "node", node.Name)
		}
		// The node's termination drains it; its disappearance brings the claim back here.
		return 5 * time.Second, nil
	}
	if claim.Status.ProviderID != "" || !claim.IsTrue(karpv1.ConditionTypeLaunched) {
		// A claim that was launching may have an instance whose ID never reached its status; the
		// cloud finds it by the claim.
		done := metrics.CloudCall("nodeclaim.lifecycle", "Delete", c.opts.Cloud)
		err := c.opts.Cloud.Delete(ctx, claim)
		done(err)
		if err != nil && !cloud.IsNotFound(err) {
			return 0, err
		}
		if err == nil {
			logger.Info("Terminating instance", "providerID", claim.Status.ProviderID)
			return time.Second, nil
		}
	}
	finalizers := slices.DeleteFunc(slices.Clone(claim.Finalizers), func(f string) bool { return f == karpv1.TerminationFinalizer })
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": claim.ResourceVersion}})
	if err != nil {
		return 0, err
	}
	if _, err := c.opts.NodeClaims.Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); apierrors.IsNotFound(err) {
		// An earlier pass let it go; the cache had not caught up. It is counted once.
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	logger.Info("NodeClaim terminated")
	c.metrics().Terminated(claim)
	c.opts.Replan()
	return 0, nil
}
