package schedulerview

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// Nomination is a pod a plan put on a launching node, and that node.
type Nomination struct {
	Pod  *corev1.Pod
	Node string
}

// Admissible returns the wanted nominations that can stand together: each pod passes the
// scheduler's Filter on its node with all of them in place (View.Admits). The scheduler's
// nominations in view stay; the wanted pods' own current nominations are set aside first. Pods
// are taken highest priority first (the scheduler keeps room for those of equal or higher
// priority), then oldest first, each admitted if it passes beside those admitted before it; then
// any admitted pod that fails beside those admitted after it is dropped, until none fails. A
// dropped pod can only make the others' first Filter pass easier (its requests and its count in
// the node's domains are gone) while their second pass, without nominated pods, does not see it.
func Admissible(ctx context.Context, view *View, wanted []Nomination) map[types.UID]bool {
	sort.SliceStable(wanted, func(i, j int) bool {
		a, b := wanted[i].Pod, wanted[j].Pod
		if pa, pb := corev1helpers.PodPriority(a), corev1helpers.PodPriority(b); pa != pb {
			return pa > pb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	for _, w := range wanted {
		view.Unnominate(w.Pod)
	}
	logger := klog.FromContext(ctx)
	pre := make([]PreFiltered, len(wanted))
	admitted := map[types.UID]bool{}
	for i, w := range wanted {
		pre[i] = view.PreFilter(ctx, w.Pod)
		if status := view.Admits(ctx, pre[i], w.Pod, w.Node); status != nil {
			logger.V(3).Info("Not nominating the pod yet: the scheduler would refuse it there while the pods nominated ahead of it wait",
				"pod", klog.KObj(w.Pod), "node", w.Node, "filter", status.Message())
			continue
		}
		view.Nominate(w.Pod, w.Node)
		admitted[w.Pod.UID] = true
	}
	for changed := true; changed; {
		changed = false
		for i, w := range wanted {
			if admitted[w.Pod.UID] && view.Admits(ctx, pre[i], w.Pod, w.Node) != nil {
				view.Unnominate(w.Pod)
				delete(admitted, w.Pod.UID)
				changed = true
			}
		}
	}
	return admitted
}
