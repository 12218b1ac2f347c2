package top

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Pricer prices an offering: an instance type in a zone with a capacity type. The AWS provider's
// price list (Pricing API and spot price history) and a catalog both do.
type Pricer interface {
	Price(instanceType, zone, capacityType string) (float64, bool)
}

// CatalogPrices prices offerings from a catalog, such as the simulated one `tailor plan` and the
// fake cloud use.
type CatalogPrices map[cloud.OfferingKey]float64

// NewCatalogPrices indexes every offering of types by its key.
func NewCatalogPrices(types []*cloud.InstanceType) CatalogPrices {
	out := CatalogPrices{}
	for _, it := range types {
		for _, o := range it.Offerings {
			out[cloud.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] = o.PricePerHour
		}
	}
	return out
}

// Price implements Pricer.
func (c CatalogPrices) Price(instanceType, zone, capacityType string) (float64, bool) {
	v, ok := c[cloud.OfferingKey{InstanceType: instanceType, Zone: zone, CapacityType: capacityType}]
	return v, ok
}

// Repriced is the catalog with every offering priced by p, and unavailable where p has no price.
// The lower bound needs instance shapes (allocatable cpu and memory) and prices: the shapes come
// from the catalog `tailor plan` uses, the prices from the same source as the nodes', so fleet
// and bound compare like with like.
func Repriced(types []*cloud.InstanceType, p Pricer) []*cloud.InstanceType {
	out := make([]*cloud.InstanceType, 0, len(types))
	for _, it := range types {
		cp := *it
		cp.Offerings = make([]cloud.Offering, len(it.Offerings))
		for i, o := range it.Offerings {
			price, ok := p.Price(it.Name, o.Zone, o.CapacityType)
			o.PricePerHour, o.Available = price, o.Available && ok
			cp.Offerings[i] = o
		}
		out = append(out, &cp)
	}
	return out
}

// eksCapacityType is the label EKS managed node groups carry instead of Karpenter's.
const eksCapacityType = "eks.amazonaws.com/capacityType"

// offering reads what a node was bought as from its labels: Karpenter's, or an EKS managed node
// group's, so nodes Tailor did not launch are priced too.
func offering(labels map[string]string) (instanceType, zone, capacityType string) {
	instanceType, zone, capacityType = labels[corev1.LabelInstanceTypeStable], labels[corev1.LabelTopologyZone], labels[karpv1.CapacityTypeLabelKey]
	if capacityType == "" {
		switch strings.ToUpper(labels[eksCapacityType]) {
		case "ON_DEMAND":
			capacityType = karpv1.CapacityTypeOnDemand
		case "SPOT":
			capacityType = karpv1.CapacityTypeSpot
		}
	}
	return instanceType, zone, capacityType
}
