package disruption

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
)

// voluntaryReasons are the DisruptionReasons this loop writes.
var voluntaryReasons = []string{string(karpv1.DisruptionReasonEmpty), string(karpv1.DisruptionReasonDrifted), string(karpv1.DisruptionReasonUnderutilized)}

// recoverAbandoned undoes decisions a previous process left half done: a node the loop tainted
// whose NodeClaim it never deleted (it stopped while waiting for a replacement, say) would
// otherwise stay tainted, offering no room, forever. It runs once, when the loop starts, before
// any decision of its own. Nodes tainted by the forceful path (no reason yet, or Interrupted or
// Expired) are left alone: the expiration and repair controllers look at every claim again as
// they start, the interruption controller's Resume finishes the interruptions it recorded, and a
// notice cut short before its reason was recorded is delivered again.
func (c *Controller) recoverAbandoned(ctx context.Context) {
	s, err := c.readState(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reading the cluster to undo abandoned disruptions")
		return
	}
	for _, n := range s.Nodes {
		claim, ok := s.claimOf(n)
		if !ok || claim.DeletionTimestamp != nil || n.DeletionTimestamp != nil || !nodetaint.IsDisrupted(n) {
			continue
		}
		reason := claim.GetCondition(karpv1.ConditionTypeDisruptionReason)
		if reason == nil || !slices.Contains(voluntaryReasons, reason.Reason) {
			continue
		}
		klog.FromContext(ctx).Info("Undoing a disruption a previous process left half done", "node", n.Name, "nodeClaim", claim.Name, "reason", reason.Reason)
		c.unmark(ctx, []*Candidate{{Claim: claim, Node: n}})
	}
}

// clearReason removes the DisruptionReason condition from a NodeClaim, if it is one of this
// loop's: a reason the forceful path wrote in the meantime stays.
func (c *Controller) clearReason(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claim, err := c.opts.NodeClaims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cond := claim.GetCondition(karpv1.ConditionTypeDisruptionReason); cond == nil || !slices.Contains(voluntaryReasons, cond.Reason) ||
			!claim.ClearCondition(karpv1.ConditionTypeDisruptionReason) {
			return nil
		}
		_, err = c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		return err
	})
}
