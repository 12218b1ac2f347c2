package planner

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/memo"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// fitCheck is one question Filter answers about a node: the pod (or a shape of it) with its
// PreFilter state and result, and the group whose refusals the memo shares.
type fitCheck struct {
	state fwk.CycleState
	pre   *fwk.PreFilterResult
	pod   *corev1.Pod
	group string
}

// firstFit returns the first of nodes, but for those in passOver, on which every Filter passes
// check and each of also. Nodes the pod surely has no room on are passed over without asking
// Filter (see Simulator.NoRoom): on a full fleet most are, and Filter would refuse each of them
// all the same. seek, when not nil, finds the next of nodes at or after a position that NoRoom
// does not rule out (Snapshot.NextWithRoom, for the snapshot's own list), so that the walk
// jumps over the full nodes instead of testing each.
func (pl *Planner) firstFit(ctx context.Context, check fitCheck, nodes []fwk.NodeInfo, seek func(simulation.Requests, int) int, rejected *memo.Rejections[*openClaim], passOver map[string]bool, also ...fitCheck) fwk.NodeInfo {
	asks := pl.leastOf(check.pod)
	if !pl.sim.ResourcesFiltered() {
		seek = nil // NoRoom rules nothing out, and neither may seek
	}
	for i := 0; i < len(nodes); i++ {
		if seek != nil {
			if i = seek(asks, i); i >= len(nodes) {
				break
			}
		}
		ni := nodes[i]
		if passOver != nil && passOver[ni.Node().Name] || pl.sim.NoRoom(asks, ni) || !pl.fits(ctx, check, ni, rejected) {
			continue
		}
		if !slices.ContainsFunc(also, func(c fitCheck) bool { return !pl.fits(ctx, c, ni, rejected) }) {
			return ni
		}
	}
	return nil
}

// fits asks Filter check's question about ni, unless the memo or the PreFilter result answers.
func (pl *Planner) fits(ctx context.Context, check fitCheck, ni fwk.NodeInfo, rejected *memo.Rejections[*openClaim]) bool {
	name := ni.Node().Name
	if !simulation.AllowedByPreFilter(check.pre, name) || rejected.NodeRejected(check.group, name, ni.GetGeneration()) {
		return false
	}
	if pl.sim.Filter(ctx, check.state, check.pod, ni).IsSuccess() {
		return true
	}
	rejected.RejectNode(check.group, name, ni.GetGeneration())
	return false
}
