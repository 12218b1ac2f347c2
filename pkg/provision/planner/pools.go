package planner

import (
	"sort"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
)

// Pool is a NodePool as the planner sees it: its instance types and what its NodeClaims already
// hold, counted against its limits (Pool, which works out its offerings).
type Pool = nodepool.Pool

// ResourceNodes counts nodes in NodePool limits.
const ResourceNodes = nodepool.ResourceNodes

// PreparePools returns the pools with their offerings worked out once, for callers that plan many
// times with the same pools (see nodepool.Prepare).
func PreparePools(pools []Pool) []Pool { return nodepool.Prepare(pools) }

// SortPools orders pools as the planner wants them: highest weight first (no weight is 0), then
// by name so that plans are deterministic.
func SortPools(pools []Pool) {
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
