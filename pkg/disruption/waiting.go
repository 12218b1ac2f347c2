package disruption

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// Pods that wait unplaced compete for the room a removal frees, and the scheduler may give it to
// them before the evicted pods come back: a pod that could not run anywhere (Pending with
// FailedProvisioning) takes the zone-spread slot an evicted StatefulSet replica needed, whose
// volume keeps it to that zone; or, when a spread allows one replica in all (minDomains above
// the domains there are), the only slot, on a node launched for it once the evicted replica is
// gone. So a probe plans the waiting pods first, over the nodes there are (the candidates gone)
// and the capacity the NodePools can launch, and only then the candidates' pods in the room
// left; as Karpenter's consolidation schedules the pending pods beside the candidates' own.
// The waiting pods are only counted: one that fits nowhere does not stop the removal, and a
// claim that only they would use is not a replacement (see outcomeOf).

// waitingOf are the pods that wait for a node and that no plan counts yet: unbound, not being
// deleted, not planned or nominated onto capacity in flight.
func waitingOf(pods []*corev1.Pod, view *planner.View) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending && !view.Counted[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

// planWithWaiting plans in's pending pods after the waiting ones, and reads the outcome for the
// pending pods alone.
func planWithWaiting(ctx context.Context, pl Planner, in planner.Input, waiting []*corev1.Pod) *Outcome {
	first := make(map[types.UID]bool, len(waiting))
	for _, p := range waiting {
		first[p.UID] = true
	}
	if len(waiting) > 0 {
		in.Pending = append(append(make([]*corev1.Pod, 0, len(waiting)+len(in.Pending)), waiting...), in.Pending...)
		// Their reasons are never read (outcomeOf skips them); explaining them anew in every
		// probe was most of what a pass cost beside pods a NodePool's limit kept pending.
		in.First, in.Unexplained = first, first
	}
	// outcomeOf reads the first of the evicted pods that fits nowhere, and nothing else then.
	in.StopAtUnplaceable = true
	return outcomeOf(pl.Plan(ctx, in), first)
}
