package cloud

import (
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DeviceSet is what one DRA driver publishes for a node of an instance type once the driver runs
// there: the devices of one ResourceSlice. The planner simulates Dynamic Resource Allocation over
// these before the node exists, and the sandbox's stand-in driver publishes them once it does, so
// both see the same devices.
type DeviceSet struct {
	// Driver is the DRA driver's name, e.g. gpu.nvidia.com.
	Driver string
	// Devices are named as the driver names them (gpu-0, gpu-1, ...), with the attributes and
	// capacities a DeviceClass or a claim's CEL selector reads.
	Devices []resourcev1.Device
}

// ResourceSlices returns the ResourceSlices the drivers of sets publish for the node nodeName:
// one slice per driver, in a pool named after the node, as node-local drivers do.
func ResourceSlices(nodeName string, sets []DeviceSet) []*resourcev1.ResourceSlice {
	out := make([]*resourcev1.ResourceSlice, 0, len(sets))
	for _, set := range sets {
		node := nodeName
		out = append(out, &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: SliceName(nodeName, set.Driver)},
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   set.Driver,
				NodeName: &node,
				Pool:     resourcev1.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
				Devices:  deepCopyDevices(set.Devices),
			},
		})
	}
	return out
}

// SliceName is the name of the slice driver publishes for nodeName: the two joined, with what a
// DNS subdomain does not allow replaced, and cut to the longest name the API server accepts.
func SliceName(nodeName, driver string) string {
	name := strings.ToLower(nodeName + "-" + strings.ReplaceAll(driver, "/", "-"))
	if len(name) > validation.DNS1123SubdomainMaxLength {
		name = strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength], "-.")
	}
	return name
}

func deepCopyDevices(in []resourcev1.Device) []resourcev1.Device {
	out := make([]resourcev1.Device, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
