package nodepool

import (
	"sort"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Sort orders pools as the planner wants them: highest weight first (no weight is 0), then by
// name so that plans are deterministic.
func Sort(pools []Pool) {
	sort.SliceStable(pools, func(i, j int) bool {
		wi, wj := weight(pools[i].NodePool), weight(pools[j].NodePool)
		if wi != wj {
			return wi > wj
		}
		return pools[i].NodePool.Name < pools[j].NodePool.Name
	})
}

func weight(np *karpv1.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}
