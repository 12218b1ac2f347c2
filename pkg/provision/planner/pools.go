package planner

import (
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

// PoolCache keeps prepared pools from one reading of the cluster to the next (see
// nodepool.Cache).
type PoolCache = nodepool.Cache

// SortPools orders pools as the planner wants them (see nodepool.Sort).
func SortPools(pools []Pool) { nodepool.Sort(pools) }
