package daemons

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	daemonutil "k8s.io/kubernetes/pkg/controller/daemon/util"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// PodsForNewNodes returns the pod each DaemonSet would run on a new node, with the tolerations
// the DaemonSet controller adds, so that a template node is filled with its daemons before any
// pending pod is weighed against it.
func PodsForNewNodes(dss []*appsv1.DaemonSet) []*corev1.Pod {
	controller := true
	out := make([]*corev1.Pod, 0, len(dss))
	for _, ds := range dss {
		if ds.DeletionTimestamp != nil {
			continue
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:      ds.Name + "-on-new-node",
				Namespace: ds.Namespace,
				UID:       types.UID("daemonset-" + string(ds.UID)),
				Labels:    ds.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &controller,
				}},
			},
			Spec: *ds.Spec.Template.Spec.DeepCopy(),
		}
		daemonutil.AddOrUpdateDaemonPodTolerations(&pod.Spec)
		out = append(out, pod)
	}
	return out
}

// Set is the DaemonSet pods of one plan, each with the PreFilter state it was prepared with, and
// the simulator (holding the plan's snapshot) that weighs them.
type Set struct {
	sim    *simulation.Simulator
	pods   []*corev1.Pod
	states []fwk.CycleState
	// on keeps On's answer per candidate for this plan. It lives here, not on the candidate: a
	// prepared pool's candidates are shared read-only by every plan of a pass.
	on map[*nodepool.Candidate][]*corev1.Pod
}

// Prepare runs PreFilter for each DaemonSet pod against the simulator's snapshot; a pod whose
// PreFilter rejects it would run on no node, and is left out.
func Prepare(ctx context.Context, sim *simulation.Simulator, pods []*corev1.Pod) *Set {
	s := &Set{sim: sim}
	for _, p := range pods {
		state, _, status := sim.PreFilter(ctx, p)
		if status != nil {
			continue
		}
		s.pods = append(s.pods, p)
		s.states = append(s.states, state)
	}
	return s
}

// Len is how many DaemonSet pods may run somewhere; 0 for a nil Set.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.pods)
}

// On returns the DaemonSet pods that would run on the candidate: those whose placement Filters
// (taints, labels, ports, ...; not room) pass on its template node. Room is left out as the
// DaemonSet controller leaves it out: it creates the pod on every node it may run on, and a node
// too small for its daemons and the pending pods is not one to launch. Computed once per
// candidate and plan: the answer is kept in the Set. A Set with no pods answers none without
// looking at the candidate.
func (s *Set) On(ctx context.Context, c *nodepool.Candidate) []*corev1.Pod {
	if s.Len() == 0 {
		return nil
	}
	if ds, ok := s.on[c]; ok {
		return ds
	}
	var ds []*corev1.Pod
	ni := framework.NewNodeInfo()
	ni.SetNode(c.TemplateNode("daemonset-probe"))
	for i, p := range s.pods {
		if s.sim.FilterPlacement(ctx, s.states[i], p, ni).IsSuccess() || s.runsOnSome(ctx, c, ni, s.states[i], p) {
			ni.AddPod(p)
			ds = append(ds, p)
		}
	}
	if s.on == nil {
		s.on = map[*nodepool.Candidate][]*corev1.Pod{}
	}
	s.on[c] = ds
	return ds
}

// runsOnSome reports whether the DaemonSet pod would run on the probe ni labelled with some value
// of the pool's free custom keys that it names (see nodepool's DaemonChoices).
func (s *Set) runsOnSome(ctx context.Context, c *nodepool.Candidate, ni *framework.NodeInfo, state fwk.CycleState, p *corev1.Pod) bool {
	for _, choice := range c.Pool.DaemonChoices(p) {
		view := *ni
		view.SetNode(c.TemplateNode("daemonset-probe", choice))
		if s.sim.FilterPlacement(ctx, state, p, &view).IsSuccess() {
			return true
		}
	}
	return false
}

// ReserveInFlight puts on every node in flight the DaemonSet pods that will run there and are not
// there yet: a NodeClaim's stand-in, or a node that registered before the DaemonSet controller
// created its pods, would otherwise look roomier than it will be, and pods planned onto the room
// their daemons then take would not fit when the node is ready.
func (s *Set) ReserveInFlight(ctx context.Context, snapshot *simulation.Snapshot, nodes []fwk.NodeInfo, inFlight map[string]string) {
	if s.Len() == 0 {
		return
	}
	for _, ni := range nodes {
		node := ni.Node()
		if _, ok := inFlight[node.Name]; !ok {
			continue
		}
		info, ok := ni.(*framework.NodeInfo)
		if !ok {
			continue
		}
		running := map[types.UID]bool{}
		for _, p := range info.GetPods() {
			if ref := metav1.GetControllerOf(p.GetPod()); ref != nil && ref.Kind == "DaemonSet" {
				running[ref.UID] = true
			}
		}
		for i, d := range s.pods {
			ref := metav1.GetControllerOf(d)
			if ref == nil || running[ref.UID] {
				continue
			}
			if s.sim.FilterPlacement(ctx, s.states[i], d, info).IsSuccess() {
				snapshot.AddPod(info, clusterview.OnNode(d, node.Name))
			}
		}
	}
}
