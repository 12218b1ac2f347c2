package planner

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/provision/planner/prefilter"
)

// podGuards are a pending pod as the scheduler weighs it, checked beside each of its shapes (see
// preferences.Ladder) in the same view: without the empty domains (its state from before the
// shapes, without, when there is one) and with them, each made once per pod.
type podGuards struct {
	pod     *corev1.Pod
	spec    string
	without fwk.CycleState
	made    [2]*asScheduled
}

// of returns the pod's guard for the view with or without the empty domains, which the simulator
// must be using.
func (g *podGuards) of(ctx context.Context, pf *prefilter.States, domains bool) (*asScheduled, *fwk.Status) {
	d := 0
	if domains {
		d = 1
	}
	if g.made[d] == nil {
		state := g.without
		if domains || state == nil {
			var status *fwk.Status
			if state, _, status = pf.Run(ctx, g.pod, g.spec, -1, domains); status != nil {
				return nil, status
			}
		}
		g.made[d] = &asScheduled{pod: g.pod, state: state}
	}
	return g.made[d], nil
}

// book makes the claim hold pod where it was opened for a stricter shape of it.
func (oc *openClaim) book(pod *corev1.Pod) {
	if n := len(oc.pods); n > 0 && oc.pods[n-1].UID == pod.UID {
		oc.pods[n-1] = pod
		oc.lastPod = pod
	}
}

// PreferNoSchedule taints are the last preference a pod gives up, as in Karpenter, which treats
// them as NoSchedule until every other preference is relaxed; the scheduler's TaintToleration
// score ranks a node lower for each one the pod does not tolerate, and its Filter ignores them.
// So every shape of a pod's ladder stays off the NodePools whose nodes carry a PreferNoSchedule
// taint it does not tolerate (their open claims and new ones alike), and the pod itself goes
// anywhere the Filter plugins let it. The shape that gives up every other preference is a copy
// of the pod itself (preferNoScheduleStep names it).

// preferNoScheduleStep is the step of the shape that only keeps a pod off the NodePools whose
// PreferNoSchedule taints it does not tolerate; a ladder has far fewer steps.
const preferNoScheduleStep = 1 << 20

// shunnedPools returns the pools with a PreferNoSchedule taint the pod does not tolerate, or nil
// when there are none.
func shunnedPools(pod *corev1.Pod, pools []*nodepool.State) map[*nodepool.State]bool {
	var out map[*nodepool.State]bool
	for _, ps := range pools {
		for i := range ps.NodePool.Spec.Template.Spec.Taints {
			t := &ps.NodePool.Spec.Template.Spec.Taints[i]
			if t.Effect == corev1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, t, true) {
				if out == nil {
					out = map[*nodepool.State]bool{}
				}
				out[ps] = true
				break
			}
		}
	}
	return out
}

// shunningViews returns views with one more shape, a copy of the pod that keeps off the shunned
// pools, just before the first view that weighs the pod itself: every other preference gives way
// before this one does.
func shunningViews(pod *corev1.Pod, views []capacityView, shunned map[*nodepool.State]bool) []capacityView {
	if len(shunned) == 0 {
		return views
	}
	i := slices.IndexFunc(views, func(v capacityView) bool { return v.as == pod })
	if i < 0 {
		return views
	}
	shape := capacityView{as: pod.DeepCopy(), step: preferNoScheduleStep, domains: views[i].domains}
	return slices.Insert(slices.Clone(views), i, shape)
}

// shunnedReason is why a shape of pod was not placed in pool ps.
func shunnedReason(ps *nodepool.State) string {
	return fmt.Sprintf("NodePool %s has a PreferNoSchedule taint the pod does not tolerate; weighed after the pod's other preferences", ps.NodePool.Name)
}
