package scheduling

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Karpenter's inclusive bounds, which corev1 node selectors spell as Gt and Lt.
const (
	OpGte corev1.NodeSelectorOperator = "Gte"
	OpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeSelectorRequirements turns NodePool or NodeClaim requirements into plain node selector
// requirements that the scheduler's helpers evaluate: minValues is dropped (it constrains the set
// of launch options, not a single node), and Gte/Lte become Gt/Lt one step further out.
func NodeSelectorRequirements(reqs []karpv1.NodeSelectorRequirementWithMinValues) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(reqs))
	for _, r := range reqs {
		req := corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
		if (r.Operator == OpGte || r.Operator == OpLte) && len(r.Values) == 1 {
			if n, err := strconv.ParseInt(r.Values[0], 10, 64); err == nil {
				if r.Operator == OpGte {
					req.Operator, req.Values = corev1.NodeSelectorOpGt, []string{strconv.FormatInt(n-1, 10)}
				} else {
					req.Operator, req.Values = corev1.NodeSelectorOpLt, []string{strconv.FormatInt(n+1, 10)}
				}
			}
		}
		out = append(out, req)
	}
	return out
}
