package disruption

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/provision"
)

// Pods that wait unplaced compete for the room a removal frees, and the scheduler may give it to
// them before the evicted pods come back: a pod that could not run anywhere (Pending with
// FailedProvisioning) takes the zone-spread slot an evicted StatefulSet replica needed, whose
// volume keeps it to that zone (harness seed 1489). So a probe first places the waiting pods on
// the nodes there are, the candidates gone, and only then the candidates' pods, as Karpenter's
// consolidation schedules the pending pods beside the candidates' own. The waiting pods are only
// counted, never planned for: they get no new capacity, and one that fits nowhere does not
// stop the removal.

// waitingOf are the pods that wait for a node and that no plan counts yet: unbound, not being
// deleted, not planned or nominated onto capacity in flight.
func waitingOf(pods []*corev1.Pod, view *provision.View) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending && !view.Counted[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

// placeWaiting plans the waiting pods over in's cluster with no NodePool to launch from, and
// returns those that fit as bound to the node the plan counted them on.
func placeWaiting(ctx context.Context, pl Planner, in provision.Input, waiting []*corev1.Pod) []*corev1.Pod {
	if len(waiting) == 0 {
		return nil
	}
	in.Pending, in.Pools, in.DaemonSets, in.Destined = waiting, nil, nil, nil
	plan := pl.Plan(ctx, in)
	nodeOfClaim := make(map[string]string, len(in.InFlight))
	for node, claim := range in.InFlight {
		nodeOfClaim[claim] = node
	}
	var out []*corev1.Pod
	for _, p := range waiting {
		if node, ok := plan.FitsExistingOn[p.UID]; ok {
			out = append(out, boundTo(p, node))
		}
	}
	for claim, pods := range plan.InFlight {
		if node := nodeOfClaim[claim]; node != "" {
			for _, p := range pods {
				out = append(out, boundTo(p, node))
			}
		}
	}
	return out
}

func boundTo(p *corev1.Pod, node string) *corev1.Pod {
	out := p.DeepCopy()
	out.Spec.NodeName = node
	out.Status.NominatedNodeName = ""
	return out
}
