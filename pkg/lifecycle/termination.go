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
)

// finalize terminates the claim's instance, removes its Node, and then lets the claim go.
// Draining the node first is the termination controller's job (a later step); here the order
// that matters is: instance gone before finalizer dropped, so nothing leaks.
func (c *Controller) finalize(ctx context.Context, claim *karpv1.NodeClaim) (time.Duration, error) {
	if !hasFinalizer(claim.Finalizers, karpv1.TerminationFinalizer) {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("nodeClaim", claim.Name)
	if claim.Status.ProviderID != "" {
		err := c.opts.Cloud.Delete(ctx, claim)
		if err != nil && !cloud.IsNotFound(err) {
			return 0, err
		}
		if err == nil {
			// Termination was requested; confirm it is gone on the next pass.
			logger.Info("Terminating instance", "providerID", claim.Status.ProviderID)
			return time.Second, nil
		}
	}
	node, err := c.nodeForClaim(claim)
	if err != nil {
		return 0, err
	}
	if node != nil {
		if err := c.opts.Kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	finalizers := slices.DeleteFunc(slices.Clone(claim.Finalizers), func(f string) bool { return f == karpv1.TerminationFinalizer })
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": claim.ResourceVersion}})
	if err != nil {
		return 0, err
	}
	if _, err := c.opts.NodeClaims.Patch(ctx, claim.Name, types.MergePatchType, patch); err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	logger.Info("Terminated NodeClaim")
	c.opts.Replan()
	return 0, nil
}
