package scheduling

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// IsLeaving reports whether the node (or its NodeClaim, if known) is being deleted or disrupted:
// it offers no capacity, and its pods are about to need some.
func IsLeaving(n *corev1.Node, claim *karpv1.NodeClaim) bool {
	if n.DeletionTimestamp != nil || (claim != nil && claim.DeletionTimestamp != nil) {
		return true
	}
	return HasTaintKey(n, karpv1.DisruptedTaintKey)
}

// HasTaintKey reports whether the node carries a taint with key, whatever its value and effect.
func HasTaintKey(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// Unbound is the pod as it will be once evicted and made again: on no node, nominated nowhere.
func Unbound(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	out.Spec.NodeName = ""
	out.Status.NominatedNodeName = ""
	return out
}
