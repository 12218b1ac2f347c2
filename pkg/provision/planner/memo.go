package planner

import (
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
)

// rejections lets the identical pods of a Deployment skip the places that turned away the first
// of them. It is exact, not a shortcut: it is used only for pods whose rejection by a place lasts
// for the rest of the plan, because during a plan places only gain pods, limits only fill, and a
// pod's own constraints that could be met later (required pod affinity, DoNotSchedule topology
// spread) rule the pod out of memoisation.
type rejections struct {
	nodes  map[string]map[string]int64           // group -> node name -> node generation
	claims map[string]map[*openClaim]bool        // group -> claims that turned it away
	pools  map[string]map[*nodepool.State]string // group -> pool -> why
}

func newRejections() *rejections {
	return &rejections{nodes: map[string]map[string]int64{}, claims: map[string]map[*openClaim]bool{}, pools: map[string]map[*nodepool.State]string{}}
}

func (r *rejections) nodeRejected(group, node string, generation int64) bool {
	g, ok := r.nodes[group][node]
	return group != "" && ok && g == generation
}

func (r *rejections) rejectNode(group, node string, generation int64) {
	if group == "" {
		return
	}
	if r.nodes[group] == nil {
		r.nodes[group] = map[string]int64{}
	}
	r.nodes[group][node] = generation
}

// claimsRejecting returns the claims that turned group away so far (nil for none), for a pod
// that asks of every open claim in turn.
func (r *rejections) claimsRejecting(group string) map[*openClaim]bool {
	if group == "" {
		return nil
	}
	return r.claims[group]
}

func (r *rejections) rejectClaim(group string, oc *openClaim) {
	if group == "" {
		return
	}
	if r.claims[group] == nil {
		r.claims[group] = map[*openClaim]bool{}
	}
	r.claims[group][oc] = true
}

func (r *rejections) poolRejected(group string, ps *nodepool.State) (string, bool) {
	if group == "" {
		return "", false
	}
	why, ok := r.pools[group][ps]
	return why, ok
}

func (r *rejections) rejectPool(group string, ps *nodepool.State, why string) {
	if group == "" {
		return
	}
	if r.pools[group] == nil {
		r.pools[group] = map[*nodepool.State]string{}
	}
	r.pools[group][ps] = why
}
