package nodeclass

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// restampClaims gives the class's NodeClaims that carry a hash of another version (launched by
// Karpenter, or by a Tailor that hashed differently) the class's current hash, as Karpenter's
// hash controller does on a version bump. Their old hash cannot be compared with this one: left
// alone, they could never drift on the class's static fields; called drifted, every node of the
// class would be replaced on the day Tailor is installed. Claims already Drifted keep their
// hash, so a real drift is not forgotten.
//
// It runs when the class itself is re-stamped with a new version, which is when such claims
// appear: at install (the class carries Karpenter's version) and after an upgrade.
func (c *Controller) restampClaims(ctx context.Context, nc *awsv1.EC2NodeClass, hash, version string) error {
	nodeClaims := c.opts.Clients.KarpenterV1().NodeClaims()
	claims, err := nodeClaims.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing NodeClaims to re-stamp the hash of EC2NodeClass %s: %w", nc.Name, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		awsv1.AnnotationEC2NodeClassHash: hash, awsv1.AnnotationEC2NodeClassHashVersion: version}}})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		if !needsRestamp(claim, nc.Name, version) {
			continue
		}
		if _, err := nodeClaims.Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("re-stamping the EC2NodeClass hash on NodeClaim %s: %w", claim.Name, err)
		}
		klog.FromContext(ctx).Info("Re-stamped NodeClaim with the current EC2NodeClass hash version", "nodeClaim", claim.Name,
			"ec2NodeClass", nc.Name, "was", claim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion], "version", version)
	}
	return nil
}

// needsRestamp says whether claim, of some class, should get class's hash of version. A claim
// with no version at all has not launched yet: its launch stamps the hash it launched with, and a
// write now would only race the launch's own status writes.
func needsRestamp(claim *karpv1.NodeClaim, class, version string) bool {
	ref := claim.Spec.NodeClassRef
	had, stamped := claim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	return ref != nil && ref.Name == class && (ref.Group == "" || ref.Group == awsv1.Group) &&
		claim.DeletionTimestamp == nil && stamped && had != version &&
		!claim.IsTrue(karpv1.ConditionTypeDrifted)
}
