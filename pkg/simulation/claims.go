package simulation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/tailor-sh/tailor/pkg/simulation/dra"
)

// DRA returns the simulation's DRA manager, whose overlay the planner fills for each plan: the
// devices of nodes that do not exist yet, and the claims the plan allocated (see package dra).
func (s *Simulator) DRA() *dra.Manager { return s.dra }

// ReserveClaims records in the DRA overlay the devices the pod's claims take on nodes, all views
// of one node (named alike) that may still launch as different instance types: on each view,
// DynamicResources' own PreFilter, Filter and Reserve run for the pod, so the allocation is the
// plugin's, made by the structured allocator, and Reserve signals it to the manager. The views
// are weighed against the overlay as it was before the pod, and what they reserved is recorded
// together (dra.Manager.Gather). A pod whose claims are all allocated already (a shared claim
// the plan allocated for an earlier pod) takes nothing more. Without DynamicResources in the
// profile there is nothing to record.
func (s *Simulator) ReserveClaims(ctx context.Context, pod *corev1.Pod, nodes []fwk.NodeInfo) error {
	if s.claims == nil || len(nodes) == 0 {
		return nil
	}
	name := nodes[0].Node().Name
	return s.dra.Gather(name, func() error {
		for _, ni := range nodes {
			view := s.deviceView(ni)
			state := framework.NewCycleState()
			if _, status, _ := s.claims.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() && !status.IsSkip() {
				return fmt.Errorf("reserving the claims of pod %s/%s on %s: %s", pod.Namespace, pod.Name, name, status.Message())
			}
			if status := s.claims.RunFilterPlugins(ctx, state, pod, view); !status.IsSuccess() {
				return fmt.Errorf("reserving the claims of pod %s/%s on %s: %s", pod.Namespace, pod.Name, name, status.Message())
			}
			if status := s.claims.RunReservePluginsReserve(ctx, state, pod, view.Node().Name); !status.IsSuccess() {
				return fmt.Errorf("reserving the claims of pod %s/%s on %s: %s", pod.Namespace, pod.Name, name, status.Message())
			}
		}
		return nil
	})
}

// filterDevices runs DynamicResources' Filter for pod on node's view (deviceView). A pod for
// which the plugin's PreFilter skipped its Filter (no claim, no extended resource it backs) costs
// no view.
func (s *Simulator) filterDevices(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	if s.claims == nil || state.GetSkipFilterPlugins().Has(names.DynamicResources) {
		return nil
	}
	return s.claims.RunFilterPlugins(ctx, state, pod, s.deviceView(node))
}

// deviceView is node as DynamicResources is to see it: a template node of the DRA overlay renamed
// to its view as its instance type (dra.Manager.ViewName), any other node as it is. Only the name
// differs; the plugin reads the node's name and labels, and its allocatable only for
// node-allocatable claims.
func (s *Simulator) deviceView(node fwk.NodeInfo) fwk.NodeInfo {
	n := node.Node()
	if n == nil {
		return node
	}
	name, ok := s.dra.ViewName(n)
	ni, concrete := node.(*framework.NodeInfo)
	if !ok || !concrete {
		return node
	}
	renamed := *n
	renamed.Name = name
	view := *ni
	view.SetNode(&renamed)
	return &view
}

// PreEnqueue runs the profile's PreEnqueue plugins for pod: a pod one of them refuses is not
// tried by the scheduler at all (its ResourceClaim not created yet, a scheduling gate), so a
// plan leaves it waiting rather than planning capacity for it.
func (s *Simulator) PreEnqueue(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	for _, pl := range s.fw.PreEnqueuePlugins() {
		if status := pl.PreEnqueue(ctx, pod); !status.IsSuccess() {
			return status.WithPlugin(pl.Name())
		}
	}
	return nil
}

// withReserve returns p with only the named plugin at Reserve.
func withReserve(p *config.KubeSchedulerProfile, name string) *config.KubeSchedulerProfile {
	p.Plugins.Reserve.Disabled = append(p.Plugins.Reserve.Disabled, config.Plugin{Name: "*"})
	p.Plugins.Reserve.Enabled = []config.Plugin{{Name: name}}
	return p
}
