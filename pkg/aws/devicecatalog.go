package aws

import (
	"context"
	"sort"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

var _ cloud.DeviceCatalog = (*Provider)(nil)

// InstanceTypeDevices is cloud.DeviceCatalog: the built-in devices of the named type, from the
// same cached EC2 catalog InstanceTypes reads, so a node nobody planned gets the devices a
// planned node of its type would.
func (p *Provider) InstanceTypeDevices(ctx context.Context, instanceType string) ([]cloud.DeviceSet, bool, error) {
	types, _, err := p.catalog.get(ctx)
	if err != nil {
		return nil, false, err
	}
	// The catalog is sorted by name.
	i := sort.Search(len(types), func(i int) bool { return string(types[i].InstanceType) >= instanceType })
	if i == len(types) || string(types[i].InstanceType) != instanceType {
		return nil, false, nil
	}
	return builtInDevices(types[i]), true, nil
}
