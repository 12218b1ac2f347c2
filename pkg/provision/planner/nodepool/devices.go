package nodepool

import "github.com/tailor-sh/tailor/pkg/cloud"

// TypeDevices are the devices of every type of the pool that has some, by type name: what a
// claim the next pod would open in the pool may publish to DynamicResources.
func (ps *State) TypeDevices() map[string][]cloud.DeviceSet {
	out := map[string][]cloud.DeviceSet{}
	for _, t := range ps.Types {
		if len(t.It.Devices) > 0 {
			out[t.It.Name] = t.It.Devices
		}
	}
	return out
}

// DevicesOf are the devices of the types of offerings (indices into Compatible) that have some,
// by type name: what an open claim that may still launch as any of them publishes.
func (ps *State) DevicesOf(offerings []int) map[string][]cloud.DeviceSet {
	out := map[string][]cloud.DeviceSet{}
	for _, i := range offerings {
		if it := ps.Compatible[i].It; len(it.Devices) > 0 {
			out[it.Name] = it.Devices
		}
	}
	return out
}
