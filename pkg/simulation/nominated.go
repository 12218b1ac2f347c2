package simulation

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// nominations is the simulation framework's PodNominator. The scheduler's own nominator is its
// queue; the simulator's holds whatever the caller last gave SetNominated, so that
// FilterWithNominated asks the framework's own two-pass Filter with those nominations.
type nominations struct {
	current atomic.Pointer[map[string][]fwk.PodInfo]
}

// The caller says what is nominated; the framework never nominates in a simulation (PostFilter
// is disabled), so the write methods have nothing to do.
func (*nominations) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (*nominations) DeleteNominatedPodIfExists(*corev1.Pod)                        {}
func (*nominations) UpdateNominatedPod(klog.Logger, *corev1.Pod, fwk.PodInfo)      {}

func (n *nominations) NominatedPodsForNode(nodeName string) []fwk.PodInfo {
	m := n.current.Load()
	if m == nil {
		return nil
	}
	return (*m)[nodeName]
}

// SetNominated makes FilterWithNominated see these pods nominated to these nodes (by node name)
// until the next call. Filter, FilterCapacity and FilterPlacement never read them.
func (s *Simulator) SetNominated(byNode map[string][]fwk.PodInfo) {
	s.nominated.current.Store(&byNode)
}

// FilterWithNominated answers as the scheduler does in its own cycle: when pods of equal or
// higher priority are nominated to node, the Filter plugins must pass both with those pods
// counted on it (their room is kept for them, and spread and anti-affinity count them there) and
// without them (they may yet go elsewhere). This is the framework's
// RunFilterPluginsWithNominatedPods, over the nominations given to SetNominated.
func (s *Simulator) FilterWithNominated(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	return s.fw.RunFilterPluginsWithNominatedPods(ctx, state, pod, node)
}
