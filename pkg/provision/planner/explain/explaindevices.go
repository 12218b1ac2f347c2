package explain

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/tailor-sh/tailor/pkg/simulation/dra"
)

// Devices says, when DynamicResources refused the pod on some offering, what its claims
// ask: each request of each claim not allocated yet, by claim, request, DeviceClass, count and
// CEL selectors, the words a user edits. The plugin's own message ("cannot allocate all claims")
// names none of them. "" when the plugin refused it nowhere.
func Devices(claims *dra.Manager, pod *corev1.Pod, statuses []*fwk.Status) string {
	refused := false
	for _, s := range statuses {
		refused = refused || (!s.IsSuccess() && s.Plugin() == names.DynamicResources)
	}
	if !refused {
		return ""
	}
	var parts []string
	for i := range pod.Spec.ResourceClaims {
		name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil || name == nil {
			continue
		}
		claim, err := claims.ResourceClaims().Get(pod.Namespace, *name)
		switch {
		case err != nil:
			parts = append(parts, fmt.Sprintf("ResourceClaim %s/%s: %v", pod.Namespace, *name, err))
		case claim.Status.Allocation != nil:
			parts = append(parts, fmt.Sprintf("ResourceClaim %s/%s is allocated already, on nodes the pod cannot go to", claim.Namespace, claim.Name))
		default:
			for _, r := range claim.Spec.Devices.Requests {
				parts = append(parts, describeRequest(claim, r))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the devices of no instance type satisfy " + strings.Join(parts, "; ")
}

// describeRequest says what one request of a claim asks.
func describeRequest(claim *resourcev1.ResourceClaim, r resourcev1.DeviceRequest) string {
	what := fmt.Sprintf("ResourceClaim %s/%s request %q: ", claim.Namespace, claim.Name, r.Name)
	if r.Exactly != nil {
		return what + describeDevices(r.Exactly.DeviceClassName, r.Exactly.AllocationMode, r.Exactly.Count, r.Exactly.Selectors)
	}
	alternatives := make([]string, 0, len(r.FirstAvailable))
	for _, sub := range r.FirstAvailable {
		alternatives = append(alternatives, fmt.Sprintf("%q: %s", sub.Name, describeDevices(sub.DeviceClassName, sub.AllocationMode, sub.Count, sub.Selectors)))
	}
	return what + "the first available of " + strings.Join(alternatives, ", or ")
}

func describeDevices(class string, mode resourcev1.DeviceAllocationMode, count int64, selectors []resourcev1.DeviceSelector) string {
	n := fmt.Sprintf("%d device(s)", max(count, 1))
	if mode == resourcev1.DeviceAllocationModeAll {
		n = "all devices"
	}
	out := fmt.Sprintf("%s of DeviceClass %s", n, class)
	var cel []string
	for _, s := range selectors {
		if s.CEL != nil {
			cel = append(cel, s.CEL.Expression)
		}
	}
	if len(cel) > 0 {
		out += " with selector " + strings.Join(cel, " && ")
	}
	return out
}
