package cloud

import "context"

// DeviceCatalog is implemented by a provider that can say what devices a node of an instance type
// publishes from the type's name alone, without the NodePool InstanceTypes needs. A node that no
// NodePool launched (one a cluster had before Tailor, or one of another node group) still runs
// its DRA drivers; the sandbox's stand-in driver reads this for such nodes.
type DeviceCatalog interface {
	// InstanceTypeDevices returns the devices a node of the named type publishes; ok is false when
	// the provider does not know the type.
	InstanceTypeDevices(ctx context.Context, instanceType string) (sets []DeviceSet, ok bool, err error)
}
