package simulation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// keepSpread wraps PodTopologySpread's factory so that the simulator keeps the instance its main
// framework builds (the first one built), with the profile's args and default constraints.
func (s *Simulator) keepSpread(factory frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := factory(ctx, args, h)
		if pf, ok := p.(fwk.PreFilterPlugin); ok && err == nil && s.spread == nil {
			s.spread = pf
		}
		return p, err
	}
}

// SpreadDomains runs PodTopologySpread's PreFilter alone for pod over nodes only, not the
// snapshot, and returns the state it wrote: the domains those nodes add to pod's spreads and the
// pods on them that count. A caller that keeps a pod's spread state while nodes join the view
// asks it about the new nodes alone, so the plugin's own rules (topology keys, node inclusion
// policies) decide what they add. ok is false when the profile has no PodTopologySpread or it
// failed.
func (s *Simulator) SpreadDomains(ctx context.Context, pod *corev1.Pod, nodes []fwk.NodeInfo) (state fwk.CycleState, ok bool) {
	if s.spread == nil {
		return nil, false
	}
	state = framework.NewCycleState()
	_, status := s.spread.PreFilter(ctx, state, pod, nodes)
	return state, status.IsSuccess()
}
