package memo

import (
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
)

// Rejections lets the identical pods of a Deployment skip the places that turned away the first
// of them. It is exact, not a shortcut: the planner uses it only for pods whose rejection by a
// place lasts for the rest of the plan, because during a plan places only gain pods, limits only
// fill, and a pod's own constraints that could be met later (required pod affinity,
// DoNotSchedule topology spread) rule the pod out of memoisation. The empty group is never
// remembered: it stands for a pod that is not memoised.
type Rejections[C comparable] struct {
	nodes  map[string]map[string]int64           // group -> node name -> node generation
	claims map[string]map[C]bool                 // group -> claims that turned it away
	pools  map[string]map[*nodepool.State]string // group -> pool -> why
}

// New returns an empty memo, for one plan.
func New[C comparable]() *Rejections[C] {
	return &Rejections[C]{nodes: map[string]map[string]int64{}, claims: map[string]map[C]bool{}, pools: map[string]map[*nodepool.State]string{}}
}

// NodeRejected reports whether the node turned group away when it was at generation: a node
// that changed since may take it now.
func (r *Rejections[C]) NodeRejected(group, node string, generation int64) bool {
	g, ok := r.nodes[group][node]
	return group != "" && ok && g == generation
}

// RejectNode records that the node, at generation, turned group away.
func (r *Rejections[C]) RejectNode(group, node string, generation int64) {
	if group == "" {
		return
	}
	if r.nodes[group] == nil {
		r.nodes[group] = map[string]int64{}
	}
	r.nodes[group][node] = generation
}

// ClaimsRejecting returns the claims that turned group away so far (nil for none), for a pod
// that asks of every open claim in turn.
func (r *Rejections[C]) ClaimsRejecting(group string) map[C]bool {
	if group == "" {
		return nil
	}
	return r.claims[group]
}

// RejectClaim records that the claim turned group away.
func (r *Rejections[C]) RejectClaim(group string, claim C) {
	if group == "" {
		return
	}
	if r.claims[group] == nil {
		r.claims[group] = map[C]bool{}
	}
	r.claims[group][claim] = true
}

// PoolRejected returns why the pool turned group away, and whether it did.
func (r *Rejections[C]) PoolRejected(group string, ps *nodepool.State) (string, bool) {
	if group == "" {
		return "", false
	}
	why, ok := r.pools[group][ps]
	return why, ok
}

// RejectPool records that the pool turned group away, and why.
func (r *Rejections[C]) RejectPool(group string, ps *nodepool.State, why string) {
	if group == "" {
		return
	}
	if r.pools[group] == nil {
		r.pools[group] = map[*nodepool.State]string{}
	}
	r.pools[group][ps] = why
}
