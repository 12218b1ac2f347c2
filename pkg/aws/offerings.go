package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// launchableType is an instance type as a node class would launch it: the cloud's view plus
// what the launch template needs (image, max pods, the kubelet's reservations).
type launchableType struct {
	it                     *cloud.InstanceType
	imageID                string
	pods                   int64
	kube, system, eviction map[string]string
}

// launchableTypes computes every type an AMI of the node class can boot, with allocatable as
// Karpenter computes it and offerings in the zones of the class's subnets. The answer is kept
// while nothing it reads has changed (launchKey): every round of the provisioner asks for each
// NodePool's types, and building a region's 1,345 types for each of twenty NodePools was a
// seventh of what Tailor spent in TestKarpenterShapes. The same objects each time also let the
// planner keep what it works out per pool from round to round.
func (p *Provider) launchableTypes(ctx context.Context, nc *awsv1.EC2NodeClass, res *resolve.Resolution) ([]*launchableType, error) {
	infos, typeZones, err := p.catalog.get(ctx)
	if err != nil {
		return nil, err
	}
	if awsv1.WindowsBuild(nc.AMIFamily()) != "" {
		p.prices.needWindows()
	}
	p.prices.refresh(ctx)
	// Reserved offerings change with every launch into a reservation and with the clock
	// (expiring blocks): a class with reservations is built anew each time.
	cacheable := len(infos) > 0 && len(nc.Status.CapacityReservations) == 0 && len(res.NodeClass.Status.CapacityReservations) == 0
	var key launchKey
	if cacheable {
		key = launchKey{class: launchClassKey(nc, res), catalog: &infos[0], types: len(infos), prices: p.prices.pricesVersion(), unavailable: p.unavailable.Version()}
		p.mu.Lock()
		cached, ok := p.launchable[nc.Name]
		p.mu.Unlock()
		if ok && cached.key == key {
			return cached.types, nil
		}
	}
	out, err := p.buildLaunchableTypes(nc, res, infos, typeZones)
	if err == nil && cacheable {
		p.mu.Lock()
		p.launchable[nc.Name] = launchableEntry{key: key, types: out}
		p.mu.Unlock()
	}
	return out, err
}

// launchKey is what a node class's launchable types depend on: the class's spec and what its
// resolution found that they read (the subnets' zones and the images), the catalog EC2
// described, the prices, and the offerings marked unavailable. The resolution is made anew at
// least once a minute; keyed by what it found, not by the object, an unchanged one keeps the
// types, and with them what the planner worked out for each NodePool.
type launchKey struct {
	class       string
	catalog     *ec2types.InstanceTypeInfo
	types       int
	prices      uint64
	unavailable uint64
}

type launchableEntry struct {
	key   launchKey
	types []*launchableType
}

// buildLaunchableTypes is launchableTypes without its cache.
func (p *Provider) buildLaunchableTypes(nc *awsv1.EC2NodeClass, res *resolve.Resolution, infos []ec2types.InstanceTypeInfo, typeZones map[string]sets.Set[string]) ([]*launchableType, error) {
	family := nc.AMIFamily()
	windowsBuild := awsv1.WindowsBuild(family)
	subnetZones := sets.New[string]()
	for _, s := range res.NodeClass.Status.Subnets {
		subnetZones.Insert(s.Zone)
	}
	kubelet := kubeletOf(nc)
	ephemeral := rootVolumeSize(nc)
	var out []*launchableType
	for _, info := range infos {
		labels := typeLabels(info)
		if windowsBuild != "" {
			// The family decides the node's operating system; its AMIs' requirements name it,
			// so Linux images never match a Windows type and the other way round.
			labels[corev1.LabelOSStable] = string(corev1.Windows)
			labels[corev1.LabelWindowsBuild] = windowsBuild
		}
		image := imageFor(res.NodeClass.Status.AMIs, labels)
		if image == "" {
			continue
		}
		r, err := typeResources(info, family, kubelet, p.opts.ReservedENIs, ephemeralStorage(info, nc, ephemeral), p.opts.VMMemoryOverheadPercent)
		if err != nil {
			return nil, fmt.Errorf("EC2NodeClass %q: %w", nc.Name, err)
		}
		it := &cloud.InstanceType{Name: string(info.InstanceType), Labels: labels, Capacity: r.capacity, Overhead: r.overhead, Devices: builtInDevices(info)}
		zones := sets.List(typeZones[it.Name].Intersection(subnetZones))
		for _, usage := range info.SupportedUsageClasses {
			ct := string(usage)
			if ct != karpv1.CapacityTypeSpot && ct != karpv1.CapacityTypeOnDemand {
				continue
			}
			for _, zone := range zones {
				price, priced := p.prices.onDemandPriceFor(windowsBuild != "", it.Name)
				if ct == karpv1.CapacityTypeSpot {
					price, priced = p.prices.spotPriceFor(windowsBuild != "", it.Name, zone)
				}
				key := cloud.OfferingKey{InstanceType: it.Name, Zone: zone, CapacityType: ct}
				it.Offerings = append(it.Offerings, cloud.Offering{Zone: zone, CapacityType: ct, PricePerHour: price,
					Available: priced && !p.unavailable.Has(key)})
			}
		}
		if windowsBuild == "" {
			// The class's own status, as its controller last wrote it, rather than the launch
			// cache: a reservation is offered as soon as kubectl shows it, and no longer once
			// it does not (Karpenter reads the status too).
			it.Offerings = append(it.Offerings, p.reservedOfferings(it.Name, nc.Status.CapacityReservations, subnetZones)...)
		}
		cloud.SortOfferingsByPrice(it.Offerings)
		out = append(out, &launchableType{it: it, imageID: image, pods: r.pods, kube: r.kube, system: r.system, eviction: r.eviction})
	}
	return out, nil
}

// imageFor is the first resolved AMI whose requirements the type meets (newest first), or "".
func imageFor(amis []awsv1.AMI, labels map[string]string) string {
	for _, ami := range amis {
		sel, err := scheduling.NewSelector(ami.Requirements)
		if err == nil && sel.Matches(labels) {
			return ami.ID
		}
	}
	return ""
}

// blockDeviceMappings are the node class's, or the family's defaults: an encrypted 20 GiB gp3
// root volume (Bottlerocket: a small OS volume and a 20 GiB data volume for the kubelet;
// Windows: 50 GiB at /dev/sda1, as Windows Server and its container images need).
func blockDeviceMappings(nc *awsv1.EC2NodeClass) []awsv1.BlockDeviceMapping {
	if len(nc.Spec.BlockDeviceMappings) > 0 {
		return nc.Spec.BlockDeviceMappings
	}
	gib := func(n int64) *resource.Quantity { return resource.NewQuantity(n<<30, resource.BinarySI) }
	volume := func(device string, size int64, root bool) awsv1.BlockDeviceMapping {
		return awsv1.BlockDeviceMapping{DeviceName: aws.String(device), RootVolume: root,
			EBS: &awsv1.BlockDevice{VolumeSize: gib(size), VolumeType: aws.String("gp3"), Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)}}
	}
	switch family := nc.AMIFamily(); {
	case family == awsv1.AMIFamilyBottlerocket:
		return []awsv1.BlockDeviceMapping{volume("/dev/xvda", 4, false), volume("/dev/xvdb", 20, true)}
	case awsv1.WindowsBuild(family) != "":
		return []awsv1.BlockDeviceMapping{volume("/dev/sda1", 50, true)}
	}
	return []awsv1.BlockDeviceMapping{volume("/dev/xvda", 20, true)}
}

// rootVolumeSize is the node's ephemeral-storage: the volume marked rootVolume, else the one at
// the family's kubelet device, else 20 GiB.
func rootVolumeSize(nc *awsv1.EC2NodeClass) resource.Quantity {
	device := "/dev/xvda"
	switch family := nc.AMIFamily(); {
	case family == awsv1.AMIFamilyBottlerocket:
		device = "/dev/xvdb"
	case awsv1.WindowsBuild(family) != "":
		device = "/dev/sda1"
	}
	bdms := blockDeviceMappings(nc)
	for _, pass := range []func(awsv1.BlockDeviceMapping) bool{
		func(b awsv1.BlockDeviceMapping) bool { return b.RootVolume },
		func(b awsv1.BlockDeviceMapping) bool { return deref(b.DeviceName) == device },
	} {
		for _, b := range bdms {
			if pass(b) && b.EBS != nil && b.EBS.VolumeSize != nil {
				return *resource.NewQuantity(b.EBS.VolumeSize.Value(), resource.BinarySI)
			}
		}
	}
	return *resource.NewQuantity(20<<30, resource.BinarySI)
}

// ephemeralStorage is the kubelet's disk on a type: with instanceStorePolicy RAID0, the whole
// instance store the array is built from (EC2 counts it in decimal GB, and so does Karpenter);
// otherwise, and on types without one, the root volume.
func ephemeralStorage(info ec2types.InstanceTypeInfo, nc *awsv1.EC2NodeClass, root resource.Quantity) resource.Quantity {
	if raid0(nc) && info.InstanceStorageInfo != nil && deref(info.InstanceStorageInfo.TotalSizeInGB) > 0 {
		return *resource.NewQuantity(*info.InstanceStorageInfo.TotalSizeInGB*1000*1000*1000, resource.DecimalSI)
	}
	return root
}

func raid0(nc *awsv1.EC2NodeClass) bool {
	return nc.Spec.InstanceStorePolicy != nil && *nc.Spec.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0
}

// offeringLabels are the labels a node from the offering carries on top of its type's.
func offeringLabels(it *cloud.InstanceType, o cloud.Offering, zoneIDs map[string]string, region string) map[string]string {
	labels := make(map[string]string, len(it.Labels)+len(o.Labels)+4)
	for k, v := range it.Labels {
		labels[k] = v
	}
	for k, v := range o.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = o.Zone
	labels[corev1.LabelTopologyRegion] = region
	labels[karpv1.CapacityTypeLabelKey] = o.CapacityType
	if id := zoneIDs[o.Zone]; id != "" {
		labels[awsv1.LabelTopologyZoneID] = id
	}
	return labels
}

// reservedOfferings are the type's offerings of capacity type reserved: one per capacity
// reservation the node class selected, in its zone, priced as Karpenter prices them (see
// reservedPriceDivisor) and available while the reservation has room. Windows classes get none:
// the emulated and Karpenter-selected reservations are for Linux instances, and EC2 refuses to
// put another platform in them.
func (p *Provider) reservedOfferings(instanceType string, reservations []awsv1.CapacityReservation, zones sets.Set[string]) []cloud.Offering {
	var out []cloud.Offering
	for _, cr := range reservationsFor(reservations, instanceType) {
		if !zones.Has(cr.AvailabilityZone) {
			continue
		}
		price, priced := p.prices.onDemandPriceFor(false, instanceType)
		// A block within its lead time is expiring even before the status says so.
		expiring := cr.State == "expiring" || (cr.EndTime != nil && reservationType(cr) == resolve.ReservationTypeCapacityBlock &&
			!p.opts.Clock.Now().Before(cr.EndTime.Add(-resolve.CapacityBlockLead)))
		room := p.reservations.room(cr.ID)
		out = append(out, cloud.Offering{Zone: cr.AvailabilityZone, CapacityType: karpv1.CapacityTypeReserved,
			PricePerHour:  price / reservedPriceDivisor,
			Available:     priced && !expiring && room > 0,
			Labels:        map[string]string{awsv1.LabelCapacityReservationID: cr.ID, awsv1.LabelCapacityReservationType: reservationType(cr)},
			ReservationID: cr.ID, ReservationCapacity: max(room, 0)})
	}
	return out
}

func reservationType(cr awsv1.CapacityReservation) string {
	if cr.ReservationType == "" {
		return resolve.ReservationTypeDefault
	}
	return cr.ReservationType
}

// launchClassKey is the part of launchKey that comes from the node class and its resolution.
func launchClassKey(nc *awsv1.EC2NodeClass, res *resolve.Resolution) string {
	zones := sets.New[string]()
	for _, s := range res.NodeClass.Status.Subnets {
		zones.Insert(s.Zone)
	}
	found, _ := json.Marshal(struct {
		Zones []string
		AMIs  []awsv1.AMI
	}{sets.List(zones), res.NodeClass.Status.AMIs})
	h := fnv.New64a()
	_, _ = h.Write(found)
	return specKey(nc) + "/" + strconv.FormatUint(h.Sum64(), 36)
}
