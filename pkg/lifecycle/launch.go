package lifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// launch asks the cloud for the claim's instance and records what it got. The cloud call is
// idempotent per claim, so a crash between it and the status write launches nothing twice.
func (c *Controller) launch(ctx context.Context, claim *karpv1.NodeClaim) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("nodeClaim", claim.Name)
	if l := claim.GetCondition(karpv1.ConditionTypeLaunched); l != nil && l.Status == metav1.ConditionFalse && claim.IsTrue(karpv1.ConditionTypeDisruptionReason) {
		// abandon gave the claim up: its status write comes back through the informer before
		// its delete does. Launching it again would repeat the failure (and count it twice);
		// finish the delete instead, in case it was interrupted.
		if err := c.opts.NodeClaims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
		return 0, nil
	}
	done := metrics.CloudCall("nodeclaim.lifecycle", "Create", c.opts.Cloud)
	launched, err := c.opts.Cloud.Create(ctx, claim)
	done(err)
	if err != nil {
		if ctx.Err() != nil {
			// Tailor is stopping; the next one launches the claim again with the same token.
			return 0, err
		}
		return 0, c.abandon(ctx, claim, err)
	}

	// Labels and annotations first (such as the node class hash the cloud launched with, which
	// drift is measured against): they are metadata, written by Update; then the status.
	if changed := mergeLabels(claim, launched.Labels); mergeAnnotations(claim, launched.Annotations) || changed {
		updated, err := c.opts.NodeClaims.Update(ctx, claim, metav1.UpdateOptions{})
		if err != nil {
			return 0, err
		}
		claim = updated
	}
	claim.Status.ProviderID = launched.Status.ProviderID
	claim.Status.ImageID = launched.Status.ImageID
	claim.Status.Capacity = launched.Status.Capacity
	claim.Status.Allocatable = launched.Status.Allocatable
	if launched.Status.NodeName != "" {
		claim.Status.NodeName = launched.Status.NodeName
	}
	claim.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched",
		fmt.Sprintf("launched %s %s in %s", launched.Labels[corev1.LabelInstanceTypeStable],
			launched.Labels[karpv1.CapacityTypeLabelKey], launched.Labels[corev1.LabelTopologyZone]), c.opts.Clock.Now())
	updated, err := c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return 0, err
	}
	c.metrics().Launched(updated)
	c.opts.Backoff.Succeeded(poolAndClass(updated))
	logger.Info("Launched NodeClaim", "providerID", launched.Status.ProviderID,
		"instanceType", launched.Labels[corev1.LabelInstanceTypeStable], "zone", launched.Labels[corev1.LabelTopologyZone],
		"capacityType", launched.Labels[karpv1.CapacityTypeLabelKey])
	return 0, nil
}

// abandon gives up on a claim whose launch failed: the error goes on the claim and into an Event,
// the claim is deleted (its finalizer makes sure no instance of it survives), and its pods are
// planned again; after a capacity shortage the cloud reports that offering unavailable.
func (c *Controller) abandon(ctx context.Context, claim *karpv1.NodeClaim, launchErr error) error {
	reason := "LaunchFailed"
	if cloud.IsInsufficientCapacity(launchErr) {
		reason = "InsufficientCapacity"
	}
	if pe := cloud.AsPermanentLaunch(launchErr); pe != nil {
		// Another claim would fail the same way: hold the pool back before replanning, and
		// the provisioner tells the pods why.
		pool, class := poolAndClass(claim)
		msg := pe.Message
		if msg == "" {
			msg = launchErr.Error()
		}
		held := c.opts.Backoff.Fail(pool, class, fmt.Sprintf("%s: %s", pe.Code, msg))
		klog.FromContext(ctx).Info("Launch failed permanently; holding the NodePool back", "nodeClaim", claim.Name,
			"nodePool", pool, "nodeClass", class, "code", pe.Code, "for", held)
	}
	// The status write must not fail on a conflict (a finalizer or a hash stamp written since
	// the informer's copy): an error here retries the reconcile, which would launch, and fail,
	// once more. So a conflict reads the claim again and writes the conditions onto that.
	now := c.opts.Clock.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claim.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionFalse, reason, truncate(launchErr.Error()), now)
		claim.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, reason, "", now)
		_, err := c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, getErr := c.opts.NodeClaims.Get(ctx, claim.Name, metav1.GetOptions{}); getErr == nil {
				claim = fresh
			}
		}
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.opts.Recorder.Eventf(apis.ForEvents(claim), nil, corev1.EventTypeWarning, launchEventReason(reason), "Launch",
		"NodeClaim %s could not launch: %v", claim.Name, launchErr)
	klog.FromContext(ctx).Info("Launch failed; deleting the NodeClaim so its pods are planned again",
		"nodeClaim", claim.Name, "reason", reason, "error", launchErr.Error())
	if err := c.opts.NodeClaims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	metrics.NodeClaimDisrupted(claim, reason, "") // insufficient_capacity, as Karpenter; or launch_failed
	c.opts.Replan()
	return nil
}

// poolAndClass names what a launch backoff is kept for.
func poolAndClass(claim *karpv1.NodeClaim) (string, string) {
	class := ""
	if claim.Spec.NodeClassRef != nil {
		class = claim.Spec.NodeClassRef.Name
	}
	return claim.Labels[karpv1.NodePoolLabelKey], class
}

func mergeLabels(claim *karpv1.NodeClaim, labels map[string]string) bool {
	changed := false
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	for k, v := range labels {
		if claim.Labels[k] != v {
			claim.Labels[k] = v
			changed = true
		}
	}
	return changed
}

func mergeAnnotations(claim *karpv1.NodeClaim, annotations map[string]string) bool {
	changed := false
	for k, v := range annotations {
		if claim.Annotations[k] != v {
			if claim.Annotations == nil {
				claim.Annotations = map[string]string{}
			}
			claim.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// truncate keeps condition messages within what the API accepts and a human reads.
func truncate(s string) string {
	const maxLen = 1024
	if len(s) > maxLen {
		return s[:maxLen-3] + "..."
	}
	return s
}

// launchEventReason is the Event's reason for a failed launch. A capacity shortage is Karpenter's
// InsufficientCapacityError, which alerts match; the condition keeps the shorter
// InsufficientCapacity. Karpenter writes no Event for other launch failures: LaunchFailed is
// Tailor's.
func launchEventReason(conditionReason string) string {
	if conditionReason == "InsufficientCapacity" {
		return "InsufficientCapacityError"
	}
	return conditionReason
}
