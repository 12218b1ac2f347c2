package planner

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// NodeResourcesFit checks a pod against a node only for the resources that pod requests (and the
// pod count): a pod that asks for no GPU passes on a node without one even when the pods already
// there need GPUs, and a BestEffort pod passes wherever there is a pod slot. So "the last pod
// fits with the others in place" proves the claim fits a type only for the last pod's resources.
// The claim keeps, per resource any of its pods requests, the first pod that requested it (its
// cover pod); asking NodeResourcesFit about that pod, on the claim without it, proves the claim's
// total of that resource fits. Together with the pod being weighed, the cover pods cover every
// resource, so fit is still the plugin's answer, on every resource.

// coverPod is the first pod of a claim to request a resource, with its cycle state.
type coverPod struct {
	pod   *corev1.Pod
	state fwk.CycleState
	// without is the claim as it is now without this pod; nil once the claim has changed.
	without *framework.NodeInfo
}

// noteCover records pod as the cover pod of every resource it is the first to request.
func (oc *openClaim) noteCover(pod *corev1.Pod, requests corev1.ResourceList, state fwk.CycleState) {
	for name, q := range requests {
		if q.IsZero() {
			continue
		}
		if oc.cover == nil {
			oc.cover = map[corev1.ResourceName]*coverPod{}
		}
		if _, ok := oc.cover[name]; !ok {
			oc.cover[name] = &coverPod{pod: pod, state: state}
		}
	}
	for _, cp := range oc.cover {
		cp.without = nil
	}
	oc.coverFit = nil
}

// coverFits reports whether type t holds the claim's totals of the resources that requests (the
// pod being weighed) does not ask for.
func (pl *Planner) coverFits(ctx context.Context, oc *openClaim, t int, requests corev1.ResourceList) bool {
	uncovered := false
	for name := range oc.cover {
		if q, asked := requests[name]; !asked || q.IsZero() {
			uncovered = true
			break
		}
	}
	if !uncovered {
		// The weighed pod asks for every resource the claim's pods do: its own check says it all.
		return true
	}
	key := coverKey{t: t, skip: requestedNames(requests)}
	if v, ok := oc.coverFit[key]; ok {
		return v
	}
	ok := true
	for name, cp := range oc.cover {
		if q, asked := requests[name]; asked && !q.IsZero() {
			continue
		}
		if cp.without == nil {
			without, isInfo := oc.info.Snapshot().(*framework.NodeInfo)
			if !isInfo || without.RemovePod(klog.FromContext(ctx), cp.pod) != nil {
				ok = false
				break
			}
			cp.without = without
		}
		view := &pl.scratch.cover
		*view = *cp.without
		view.Allocatable = oc.pool.Types[t].Alloc
		if !pl.sim.FilterCapacity(ctx, cp.state, cp.pod, view).IsSuccess() {
			ok = false
			break
		}
	}
	if oc.coverFit == nil {
		oc.coverFit = map[coverKey]bool{}
	}
	oc.coverFit[key] = ok
	return ok
}

// coverKey caches coverFits per type and per set of resources the weighed pod requests.
type coverKey struct {
	t    int
	skip string
}

func requestedNames(requests corev1.ResourceList) string {
	var names []string
	for name, q := range requests {
		if !q.IsZero() {
			names = append(names, string(name))
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
