package aws

import (
	"fmt"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// FactsCatalog is the region's instance types from the snapshot of EC2's published facts
// (pkg/aws/ec2facts), converted as the provider converts DescribeInstanceTypes answers for an
// AL2023 node class with default kubelet settings and the default root volume, and offered in
// the zones on demand and on spot at the snapshot's prices. `tailor plan` plans over it, so its
// plans are the provider's on real EC2 types. A region the snapshot does not model gets
// ec2facts.FallbackRegion's types and prices.
func FactsCatalog(region string, zones []string) ([]*cloud.InstanceType, error) {
	nc := &awsv1.EC2NodeClass{}
	var out []*cloud.InstanceType
	for _, t := range ec2facts.TypesIn(region) {
		info := ec2facts.Describe(t)
		r, err := typeResources(info, awsv1.AMIFamilyAL2023, kubeletConfig{}, 0, rootVolumeSize(nc), DefaultVMMemoryOverheadPercent)
		if err != nil {
			return nil, fmt.Errorf("instance type %s: %w", t.Name, err)
		}
		it := &cloud.InstanceType{Name: t.Name, Labels: typeLabels(info), Capacity: r.capacity, Overhead: r.overhead, Devices: builtInDevices(info)}
		od, _ := ec2facts.OnDemand(region, t.Name)
		for _, usage := range t.UsageClasses {
			for _, zone := range zones {
				switch usage {
				case karpv1.CapacityTypeOnDemand:
					it.Offerings = append(it.Offerings, cloud.Offering{Zone: zone, CapacityType: usage, PricePerHour: od, Available: true})
				case karpv1.CapacityTypeSpot:
					it.Offerings = append(it.Offerings, cloud.Offering{Zone: zone, CapacityType: usage, PricePerHour: ec2facts.Spot(od, t.Name, zone), Available: true})
				}
			}
		}
		cloud.SortOfferingsByPrice(it.Offerings)
		out = append(out, it)
	}
	return out, nil
}
