// Package hash keeps the static hash of a NodePool's template (karpv1.NodePool.Hash) stamped on the
// NodePool and its NodeClaims: a NodeClaim whose hash differs from its pool's was launched from a
// template that has changed since, which is drift.
package hash

import (
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Stamp sets the pool's current hash and version on annotations, which it returns (made if nil).
func Stamp(annotations map[string]string, np *karpv1.NodePool) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[karpv1.NodePoolHashAnnotationKey] = np.Hash()
	annotations[karpv1.NodePoolHashVersionAnnotationKey] = karpv1.NodePoolHashVersion
	return annotations
}

// Stamped reports whether annotations carry this pool's current hash and version.
func Stamped(annotations map[string]string, np *karpv1.NodePool) bool {
	return annotations[karpv1.NodePoolHashVersionAnnotationKey] == karpv1.NodePoolHashVersion &&
		annotations[karpv1.NodePoolHashAnnotationKey] == np.Hash()
}
