package scheduling

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// WithTaints returns taints with each of add that none of them matches (same key and effect)
// appended: what registration makes of a node's taints and its NodeClaim's.
func WithTaints(taints, add []corev1.Taint) []corev1.Taint {
	for _, t := range add {
		if !slices.ContainsFunc(taints, func(x corev1.Taint) bool { return x.MatchTaint(&t) }) {
			taints = append(taints, t)
		}
	}
	return taints
}
