package emulator

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

type fleetLTSpecXML struct {
	LaunchTemplateID   string `xml:"launchTemplateId,omitempty"`
	LaunchTemplateName string `xml:"launchTemplateName,omitempty"`
	Version            string `xml:"version,omitempty"`
}

type fleetOverridesXML struct {
	InstanceType     string  `xml:"instanceType"`
	SubnetID         string  `xml:"subnetId,omitempty"`
	AvailabilityZone string  `xml:"availabilityZone,omitempty"`
	ImageID          string  `xml:"imageId,omitempty"`
	Priority         float64 `xml:"priority,omitempty"`
}

type launchTemplateAndOverridesXML struct {
	Spec      fleetLTSpecXML    `xml:"launchTemplateSpecification"`
	Overrides fleetOverridesXML `xml:"overrides"`
}

type fleetErrorXML struct {
	LaunchTemplateAndOverrides launchTemplateAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string                        `xml:"lifecycle"`
	ErrorCode                  string                        `xml:"errorCode"`
	ErrorMessage               string                        `xml:"errorMessage"`
}

type fleetInstanceXML struct {
	LaunchTemplateAndOverrides launchTemplateAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string                        `xml:"lifecycle"`
	InstanceIDs                []string                      `xml:"instanceIds>item"`
	InstanceType               string                        `xml:"instanceType"`
}

type createFleetOutput struct {
	ec2Output
	FleetID   string             `xml:"fleetId"`
	Errors    []fleetErrorXML    `xml:"errorSet>item"`
	Instances []fleetInstanceXML `xml:"fleetInstanceSet>item"`
}

// candidate is one override of one launch template config, as CreateFleet weighs them.
type candidate struct {
	lt       *LaunchTemplate
	xml      launchTemplateAndOverridesXML
	price    float64
	priority float64
}

// createFleet serves instant fleets. Overrides are tried cheapest first (the emulator's view of
// lowest-price and price-capacity-optimized: its pools never run low unless told to), or by
// priority for the prioritized strategies. Every override tried and refused shows up in the error
// set, which is how callers learn which offerings are short of capacity.
func (e *Emulator) createFleet(q query) (ec2Response, error) {
	if t := q.get("Type"); t != "instant" {
		return nil, invalidParameter("the AWS emulator serves only instant fleets, got Type %q", t)
	}
	total, err := q.int("TargetCapacitySpecification.TotalTargetCapacity", 0)
	if err != nil || total < 1 {
		return nil, invalidParameter("TargetCapacitySpecification.TotalTargetCapacity must be at least 1")
	}
	capacityType := q.get("TargetCapacitySpecification.DefaultTargetCapacityType")
	strategy := q.get("OnDemandOptions.AllocationStrategy")
	switch capacityType {
	case karpv1.CapacityTypeSpot:
		strategy = q.get("SpotOptions.AllocationStrategy")
	case karpv1.CapacityTypeOnDemand:
	case ReservationTypeCapacityBlock:
		// Capacity Blocks take no allocation strategy: the template's reservation decides.
		strategy = ""
	default:
		return nil, invalidParameter("DefaultTargetCapacityType %q is not spot, on-demand or capacity-block", capacityType)
	}
	token := q.get("ClientToken")

	e.mu.Lock()
	if prev, ok := e.world.fleets[token]; ok && token != "" {
		e.mu.Unlock()
		// EC2 answers a repeated client token with the first call's result, launching nothing.
		return prev, nil
	}
	out := &createFleetOutput{FleetID: "fleet-" + strings.TrimPrefix(e.newID("x"), "x-")}
	var cands []candidate
	for _, cfg := range q.items("LaunchTemplateConfigs") {
		spec := fleetLTSpecXML{LaunchTemplateID: cfg.get("LaunchTemplateSpecification.LaunchTemplateId"),
			LaunchTemplateName: cfg.get("LaunchTemplateSpecification.LaunchTemplateName"), Version: cfg.get("LaunchTemplateSpecification.Version")}
		lt := e.launchTemplateByName(spec.LaunchTemplateName)
		for _, o := range cfg.items("Overrides") {
			priority, _ := strconv.ParseFloat(o.get("Priority"), 64)
			c := candidate{lt: lt, priority: priority, xml: launchTemplateAndOverridesXML{Spec: spec, Overrides: fleetOverridesXML{
				InstanceType: o.get("InstanceType"), SubnetID: o.get("SubnetId"), AvailabilityZone: o.get("AvailabilityZone"),
				ImageID: o.get("ImageId"), Priority: priority}}}
			if lt == nil {
				out.Errors = append(out.Errors, fleetError(c, capacityType, "InvalidLaunchTemplateName.NotFoundException",
					fmt.Sprintf("The specified launch template, with template name %s, does not exist.", spec.LaunchTemplateName)))
				continue
			}
			c.price = e.price(c.xml.Overrides.InstanceType, e.overrideZone(c.xml.Overrides), capacityType)
			cands = append(cands, c)
		}
	}
	prioritized := strings.HasSuffix(strategy, "prioritized")
	sort.SliceStable(cands, func(i, j int) bool {
		if prioritized && cands[i].priority != cands[j].priority {
			return cands[i].priority < cands[j].priority
		}
		return cands[i].price < cands[j].price
	})
	var launched []*Instance
	for _, c := range cands {
		if len(launched) == total {
			break
		}
		inst, code, msg := e.tryLaunch(c, capacityType, q, token)
		if inst == nil {
			out.Errors = append(out.Errors, fleetError(c, capacityType, code, msg))
			continue
		}
		launched = append(launched, inst)
		out.Instances = append(out.Instances, fleetInstanceXML{LaunchTemplateAndOverrides: c.xml, Lifecycle: capacityType,
			InstanceIDs: []string{inst.ID}, InstanceType: inst.InstanceType})
	}
	if token != "" {
		e.world.fleets[token] = out
	}
	boots := e.bootsLocked(launched)
	e.mu.Unlock()
	for _, b := range boots {
		go e.boot(b)
	}
	return out, nil
}

func fleetError(c candidate, lifecycle, code, msg string) fleetErrorXML {
	return fleetErrorXML{LaunchTemplateAndOverrides: c.xml, Lifecycle: lifecycle, ErrorCode: code, ErrorMessage: msg}
}

// overrideZone is the override's zone, from its subnet when it names none. Callers hold e.mu.
func (e *Emulator) overrideZone(o fleetOverridesXML) string {
	if o.AvailabilityZone != "" {
		return o.AvailabilityZone
	}
	for _, s := range e.world.subnets {
		if s.ID == o.SubnetID {
			return s.Zone
		}
	}
	return ""
}

func (e *Emulator) price(instanceType, zone, capacityType string) float64 {
	it := e.instanceType(instanceType)
	if it == nil {
		return 0
	}
	if capacityType == karpv1.CapacityTypeSpot {
		return it.spotPrices[zone]
	}
	return it.onDemandPrice
}

// tryLaunch starts one instance from the override, or says why it cannot. Callers hold e.mu.
func (e *Emulator) tryLaunch(c candidate, capacityType string, q query, token string) (*Instance, string, string) {
	o := c.xml.Overrides
	var subnet *Subnet
	for _, s := range e.world.subnets {
		if s.ID == o.SubnetID {
			subnet = s
		}
	}
	switch {
	case subnet == nil:
		return nil, "InvalidSubnetID.NotFound", fmt.Sprintf("The subnet ID '%s' does not exist", o.SubnetID)
	case o.AvailabilityZone != "" && o.AvailabilityZone != subnet.Zone:
		return nil, "InvalidParameterValue", fmt.Sprintf("subnet %s is in %s, not %s", subnet.ID, subnet.Zone, o.AvailabilityZone)
	case e.instanceType(o.InstanceType) == nil:
		return nil, "InvalidParameterValue", fmt.Sprintf("The instance type '%s' does not exist", o.InstanceType)
	case e.faults.ice[cloud.OfferingKey{InstanceType: o.InstanceType, Zone: subnet.Zone, CapacityType: capacityType}]:
		return nil, "InsufficientInstanceCapacity", fmt.Sprintf("There is no %s capacity for %s in %s. (SIMULATED)", capacityType, o.InstanceType, subnet.Zone)
	case subnet.AvailableIPs < 1:
		return nil, "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s'", subnet.ID)
	}
	if code, msg := checkInterfaces(c.lt, e.instanceType(o.InstanceType)); code != "" {
		return nil, code, msg
	}
	if (capacityType == ReservationTypeCapacityBlock) != (c.lt.MarketType == ReservationTypeCapacityBlock) {
		return nil, "InvalidParameterValue", fmt.Sprintf("launch template %s has market type %q; capacity blocks need %q on the template and as the fleet's capacity type",
			c.lt.Name, c.lt.MarketType, ReservationTypeCapacityBlock)
	}
	reservation, code, msg := e.reservationFor(c.lt, o.InstanceType, subnet.Zone, capacityType)
	if code != "" {
		return nil, code, msg
	}
	image := o.ImageID
	if image == "" {
		image = c.lt.ImageID
	}
	subnet.AvailableIPs--
	id := e.newID("i")
	ip := privateIP(subnet.CIDR, int64(e.nextID))
	specs := tagSpecs(q, "TagSpecification")
	inst := &Instance{
		ID: id, InstanceType: o.InstanceType, Zone: subnet.Zone, SubnetID: subnet.ID, ImageID: image, CapacityType: capacityType,
		PrivateIP: ip, PrivateDNSName: "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + privateDomain(e.region),
		State: "running", LaunchTemplate: c.lt.Name, LaunchTime: e.clock.Now(), ClientToken: token,
		Tags: copyTags(specs["instance"]), VolumeTags: copyTags(specs["volume"]),
		SecurityGroupIDs: instanceSecurityGroups(c.lt), InstanceProfile: c.lt.InstanceProfile,
		NetworkInterfaces: copyInterfaces(c.lt.NetworkInterfaces), CapacityReservationID: reservation,
	}
	e.world.instances = append(e.world.instances, inst)
	return inst, "", ""
}

// privateIP is the n-th host address of the subnet, past the five EC2 reserves.
func privateIP(cidr string, n int64) string {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "10.0.0.10"
	}
	a := prefix.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(4 + n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}
