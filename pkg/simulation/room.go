package simulation

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// Requests are the cpu (millicores) and memory (bytes) NodeResourcesFit counts for a pod at the
// least, and the one pod slot it takes: the smaller of its requests with and without pod-level
// resources, which the scheduler counts only when their feature gate is on.
type Requests struct{ MilliCPU, Memory int64 }

// MinRequests returns the pod's Requests.
func MinRequests(p *corev1.Pod) Requests {
	with := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	without := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{SkipPodLevelResources: true})
	return Requests{MilliCPU: min(with.Cpu().MilliValue(), without.Cpu().MilliValue()),
		Memory: min(with.Memory().Value(), without.Memory().Value())}
}

// ResourcesFiltered reports whether the profile's Filter runs NodeResourcesFit: only then does a
// pod that asks for more than a node has left fail Filter there.
func (s *Simulator) ResourcesFiltered() bool { return s.resourcesFiltered }

func filtersResources(plugins []string) bool {
	for _, p := range plugins {
		if p == names.NodeResourcesFit {
			return true
		}
	}
	return false
}

// NoRoom reports whether Filter surely refuses, on ni, a pod that asks for at least r: its cpu,
// memory or pod slot is more than the node has left. It answers false when it cannot tell (the
// profile does not run NodeResourcesFit), so callers may skip Filter when it says true and must
// ask Filter otherwise. It reads the node as NodeResourcesFit does, and is that plugin's first
// three checks on a lower bound of the pod's requests, with nothing else it checks.
func (s *Simulator) NoRoom(r Requests, ni fwk.NodeInfo) bool {
	if !s.resourcesFiltered {
		return false
	}
	return !freeOn(ni).holds(r)
}
