package provision

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// A plan is made from the informers as they were when it began, and on a loaded machine a plan
// of a few hundred pods takes seconds. Meanwhile the scheduler keeps binding: a pod the plan put
// on a new claim may have taken room on a node that came up while the plan was made, and the
// claim launched for it alone then stays empty until consolidation removes it (harness seed
// 1814: a 2.8 s plan, one replica bound to a node that initialized 0.5 s before the plan ended,
// and its own node launched anyway). So before the claims are created, each loses the pods
// that have since bound or gone, and a claim left with none is not created.

// stillPending returns the claims with only their pods that are still pending, dropping the
// claims left with none. A pod bound or deleted since counts as placed; one the scheduler has only
// reserved does not, since Unreserve may yet send it back. The pods of leaving nodes (leaving) are
// planned while still bound there, and are kept.
func (p *Provisioner) stillPending(ctx context.Context, claims []*planner.PlannedClaim, leaving map[types.UID]bool) []*planner.PlannedClaim {
	placed := func(pod *corev1.Pod) bool {
		if leaving[pod.UID] {
			return false
		}
		now, err := p.opts.Pods.Pods(pod.Namespace).Get(pod.Name)
		if err != nil {
			return apierrors.IsNotFound(err)
		}
		return now.UID != pod.UID || now.Spec.NodeName != "" || now.DeletionTimestamp != nil
	}
	out := claims[:0:0]
	for _, pc := range claims {
		kept := pc.Pods[:0:0]
		for _, pod := range pc.Pods {
			if !placed(pod) {
				kept = append(kept, pod)
			}
		}
		switch {
		case len(kept) == len(pc.Pods):
			out = append(out, pc)
		case len(kept) > 0:
			shrunk := *pc
			shrunk.Pods = kept
			out = append(out, &shrunk)
		default:
			klog.FromContext(ctx).V(2).Info("Not launching a planned NodeClaim: its pods were placed or deleted while the plan was made",
				"nodePool", pc.NodePool.Name, "pods", klog.KObjSlice(pc.Pods))
		}
	}
	return out
}
