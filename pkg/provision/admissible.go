package provision

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// wantedNomination is a pod a plan put on a launching node, and that node.
type wantedNomination struct {
	pod  *corev1.Pod
	node string
}

// admissible returns the wanted nominations that can stand together: each pod passes the
// scheduler's Filter on its node with all of them in place (view.admits). The scheduler's
// nominations in view stay; the wanted pods' own current nominations are set aside first. Pods
// are taken highest priority first (the scheduler keeps room for those of equal or higher
// priority), then oldest first, each admitted if it passes beside those admitted before it; then
// any admitted pod that fails beside those admitted after it is dropped, until none fails. A
// dropped pod can only make the others' first Filter pass easier (its requests and its count in
// the node's domains are gone) while their second pass, without nominated pods, does not see it.
func admissible(ctx context.Context, view *schedulerView, wanted []wantedNomination) map[types.UID]bool {
	sort.SliceStable(wanted, func(i, j int) bool {
		a, b := wanted[i].pod, wanted[j].pod
		if pa, pb := corev1helpers.PodPriority(a), corev1helpers.PodPriority(b); pa != pb {
			return pa > pb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	for _, w := range wanted {
		view.unnominate(w.pod)
	}
	logger := klog.FromContext(ctx)
	pre := make([]preFiltered, len(wanted))
	admitted := map[types.UID]bool{}
	for i, w := range wanted {
		pre[i] = view.preFilter(ctx, w.pod)
		if status := view.admits(ctx, pre[i], w.pod, w.node); status != nil {
			logger.V(3).Info("Not nominating the pod yet: the scheduler would refuse it there while the pods nominated ahead of it wait",
				"pod", klog.KObj(w.pod), "node", w.node, "filter", status.Message())
			continue
		}
		view.nominate(w.pod, w.node)
		admitted[w.pod.UID] = true
	}
	for changed := true; changed; {
		changed = false
		for i, w := range wanted {
			if admitted[w.pod.UID] && view.admits(ctx, pre[i], w.pod, w.node) != nil {
				view.unnominate(w.pod)
				delete(admitted, w.pod.UID)
				changed = true
			}
		}
	}
	return admitted
}
