package nodepool

import (
	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// Extended resources backed by DRA devices (DRAExtendedResource): a DeviceClass that names an
// extended resource (spec.extendedResourceName, such as nvidia.com/gpu) lets a pod written for a
// device plugin get the class's devices instead. The scheduler then serves the resource from DRA
// devices on every node that does not advertise it: NodeResourcesFit leaves it to
// DynamicResources, which allocates a claim of its own for the pod. A cluster that maps the
// resource to a DRA driver runs no device plugin for it, so a node Tailor launches never
// advertises it (the sandbox's emulated kubelet registers without it, as a real one would).
//
// The plan models exactly that: while some pending pod asks for such a resource (DeviceBacked),
// the offerings are weighed without it in their allocatable (WithoutBacked), and the pod counts
// as one that needs devices (AsksBacked), so the types' devices are published to
// DynamicResources as for a pod with ResourceClaims.

// DeviceClasses is where DeviceBacked looks up DeviceClasses: the simulator's DRA manager.
type DeviceClasses interface {
	DeviceClassResolver() fwk.DeviceClassResolver
}

// DeviceBacked returns the extended resources the pending pods ask for that some DeviceClass
// backs with devices; nil when there are none or the scheduler would not serve them from devices
// (the DRAExtendedResource feature is off).
func DeviceBacked(dra DeviceClasses, pending []*corev1.Pod) map[corev1.ResourceName]bool {
	if !utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) {
		return nil
	}
	classes := dra.DeviceClassResolver()
	if classes == nil {
		return nil
	}
	var out map[corev1.ResourceName]bool
	for _, pod := range pending {
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			if q.IsZero() || !schedutil.IsDRAExtendedResourceName(name) || out[name] {
				continue
			}
			if classes.GetDeviceClass(name) != nil {
				if out == nil {
					out = map[corev1.ResourceName]bool{}
				}
				out[name] = true
			}
		}
	}
	return out
}

// AsksBacked reports whether the pod asks for one of the resources of backed.
func AsksBacked(pod *corev1.Pod, backed map[corev1.ResourceName]bool) bool {
	if len(backed) == 0 {
		return false
	}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			for name, q := range containers[i].Resources.Requests {
				if backed[name] && !q.IsZero() {
					return true
				}
			}
		}
	}
	return false
}

// WithoutBacked are the pools with the resources of backed left out of their offerings'
// allocatable, as their nodes will register. A pool none of whose types advertises one of them
// is returned as it is; one prepared (Prepare) is prepared anew without them.
func WithoutBacked(pools []Pool, backed map[corev1.ResourceName]bool) []Pool {
	if len(backed) == 0 {
		return pools
	}
	out := make([]Pool, len(pools))
	for i, p := range pools {
		out[i] = p
		if !advertisesAny(p, backed) {
			continue
		}
		out[i].deviceBacked = backed
		if p.prepared != nil {
			out[i] = Prepare([]Pool{out[i]})[0]
		}
	}
	return out
}

func advertisesAny(p Pool, backed map[corev1.ResourceName]bool) bool {
	for _, it := range p.InstanceTypes {
		for name := range backed {
			if q, ok := it.Capacity[name]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// allocatableOf is what a node of the type offers the pool's pods: the type's allocatable, less
// the extended resources the node will not advertise since DRA devices back them.
func allocatableOf(p Pool, alloc corev1.ResourceList) corev1.ResourceList {
	for name := range p.deviceBacked {
		delete(alloc, name)
	}
	return alloc
}
