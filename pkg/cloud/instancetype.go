package cloud

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// InstanceType is one shape of machine the cloud sells, with the labels a node of that shape
// carries and the places and prices at which it can be bought.
type InstanceType struct {
	// Name is the value of node.kubernetes.io/instance-type, e.g. "m6i.large".
	Name string
	// Labels are the node labels every instance of this type carries: instance-type, arch, os and
	// the provider's own (karpenter.k8s.aws/instance-family and friends). Zone and capacity type
	// are per offering and are not included.
	Labels map[string]string
	// Capacity is what the machine has: cpu, memory, pods, ephemeral-storage, extended resources.
	Capacity corev1.ResourceList
	// Overhead is what the kubelet and the system hold back from Capacity (kube-reserved,
	// system-reserved and eviction thresholds added up).
	Overhead corev1.ResourceList
	// Offerings are the (zone, capacity type) pairs this type is sold in, with their prices.
	Offerings []Offering
	// Devices are what the type's DRA drivers publish once they run on its node (GPUs, Neuron
	// devices, EFA interfaces): what a ResourceClaim can be allocated from. Empty for a type
	// without devices.
	Devices []DeviceSet
}

// OfferingKey names where and how an instance type is bought.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// FindOffering returns the offering key names among types, and whether there is one.
func FindOffering(types []*InstanceType, key OfferingKey) (Offering, bool) {
	for _, it := range types {
		if it.Name != key.InstanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == key.Zone && o.CapacityType == key.CapacityType {
				return o, true
			}
		}
	}
	return Offering{}, false
}

// Offering is an instance type sold in one zone with one capacity type.
type Offering struct {
	Zone         string
	CapacityType string
	// PricePerHour is in US dollars.
	PricePerHour float64
	// Available is false while the cloud reports no capacity for it or it has no price.
	Available bool
	// Labels are what a node launched from this offering carries beyond its type's, zone and
	// capacity type: on AWS, a reserved offering's capacity reservation ID and type. Pods and
	// NodePools can select on them like on any other node label.
	Labels map[string]string
	// ReservationID names the capacity reservation a reserved offering launches into, and
	// ReservationCapacity is how many more instances that reservation takes now: a plan gives
	// it to no more of its claims than that (see the planner's reservations.go).
	ReservationID       string
	ReservationCapacity int
}

// Allocatable is Capacity minus Overhead: what pods on a node of this type can request.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, capacity := range it.Capacity {
		q := capacity.DeepCopy()
		if o, ok := it.Overhead[name]; ok {
			q.Sub(o)
			if q.Sign() < 0 {
				q = resource.Quantity{Format: q.Format}
			}
		}
		out[name] = q
	}
	return out
}

// CheapestOffering returns the cheapest available offering accepted by keep, and false if none is.
func (it *InstanceType) CheapestOffering(keep func(Offering) bool) (Offering, bool) {
	var best Offering
	found := false
	for _, o := range it.Offerings {
		if !o.Available || (keep != nil && !keep(o)) {
			continue
		}
		if !found || o.PricePerHour < best.PricePerHour {
			best, found = o, true
		}
	}
	return best, found
}

// SortOfferingsByPrice orders offerings from cheapest to dearest, breaking ties by zone and then
// capacity type so that plans are deterministic.
func SortOfferingsByPrice(offerings []Offering) {
	sort.SliceStable(offerings, func(i, j int) bool {
		a, b := offerings[i], offerings[j]
		if a.PricePerHour != b.PricePerHour {
			return a.PricePerHour < b.PricePerHour
		}
		if a.Zone != b.Zone {
			return a.Zone < b.Zone
		}
		return a.CapacityType < b.CapacityType
	})
}
