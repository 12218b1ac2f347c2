package emulator

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// buildCatalog is the region's instance types as DescribeInstanceTypes describes them, from the
// snapshot of EC2's published facts (pkg/aws/ec2facts), with its prices in the region's zones:
// the region's published on-demand price, and the snapshot's spot rule per zone applied to it.
// A region without a published price list is priced by the snapshot's rule for it (logged); one
// the snapshot does not model gets ec2facts.FallbackRegion's types and prices.
func buildCatalog(region string, zones []fake.Zone) []*instanceTypeInfo {
	if !ec2facts.Published(region) {
		klog.V(1).Info("AWS emulator: the snapshot publishes no prices for the region; a rule prices it",
			"region", region, "source", ec2facts.PriceSource(region))
	}
	types := ec2facts.TypesIn(region)
	out := make([]*instanceTypeInfo, 0, len(types))
	for _, t := range types {
		info := describe(t)
		info.onDemandPrice, _ = ec2facts.OnDemand(region, t.Name)
		for _, z := range zones {
			info.spotPrices[z.Name] = ec2facts.Spot(info.onDemandPrice, t.Name, z.Name)
		}
		out = append(out, info)
	}
	return out
}

// describe re-expresses ec2facts.Describe's answer in the emulator's XML form, so the emulator
// and `tailor plan` describe every type alike.
func describe(t *ec2facts.Type) *instanceTypeInfo {
	d := ec2facts.Describe(t)
	info := &instanceTypeInfo{
		InstanceType:                 string(d.InstanceType),
		CurrentGeneration:            aws.ToBool(d.CurrentGeneration),
		BareMetal:                    aws.ToBool(d.BareMetal),
		Hypervisor:                   string(d.Hypervisor),
		NitroEnclavesSupport:         string(d.NitroEnclavesSupport),
		VCPUInfo:                     vcpuInfo{DefaultVCPUs: int64(aws.ToInt32(d.VCpuInfo.DefaultVCpus))},
		MemoryInfo:                   sizeInMiB{SizeInMiB: aws.ToInt64(d.MemoryInfo.SizeInMiB)},
		SupportedVirtualizationTypes: strs(d.SupportedVirtualizationTypes),
		SupportedUsageClasses:        strs(d.SupportedUsageClasses),
		spotPrices:                   map[string]float64{},
	}
	p := d.ProcessorInfo
	info.ProcessorInfo = processorInfo{SupportedArchitectures: strs(p.SupportedArchitectures),
		SustainedClockSpeedInGhz: aws.ToFloat64(p.SustainedClockSpeedInGhz), Manufacturer: aws.ToString(p.Manufacturer)}
	n, dn := &info.NetworkInfo, d.NetworkInfo
	n.MaximumNetworkInterfaces, n.MaximumNetworkCards = int64(aws.ToInt32(dn.MaximumNetworkInterfaces)), int64(aws.ToInt32(dn.MaximumNetworkCards))
	n.Ipv4AddressesPerInterface, n.DefaultNetworkCardIndex = int64(aws.ToInt32(dn.Ipv4AddressesPerInterface)), int64(aws.ToInt32(dn.DefaultNetworkCardIndex))
	n.EncryptionInTransitSupported, n.EfaSupported = aws.ToBool(dn.EncryptionInTransitSupported), aws.ToBool(dn.EfaSupported)
	for _, c := range dn.NetworkCards {
		n.NetworkCards = append(n.NetworkCards, networkCard{NetworkCardIndex: int64(aws.ToInt32(c.NetworkCardIndex)),
			MaximumNetworkInterfaces: int64(aws.ToInt32(c.MaximumNetworkInterfaces)), BaselineBandwidthInGbps: aws.ToFloat64(c.BaselineBandwidthInGbps)})
	}
	if dn.EfaInfo != nil {
		n.EfaInfo = &efaInfo{MaximumEfaInterfaces: int64(aws.ToInt32(dn.EfaInfo.MaximumEfaInterfaces))}
	}
	info.EBSInfo.EBSOptimizedSupport = string(d.EbsInfo.EbsOptimizedSupport)
	if o := d.EbsInfo.EbsOptimizedInfo; o != nil {
		info.EBSInfo.EBSOptimizedInfo.MaximumBandwidthInMbps = int64(aws.ToInt32(o.MaximumBandwidthInMbps))
	}
	if g := d.GpuInfo; g != nil {
		info.GPUInfo = &gpuInfo{TotalGPUMemoryInMiB: int64(aws.ToInt32(g.TotalGpuMemoryInMiB))}
		for _, x := range g.Gpus {
			info.GPUInfo.GPUs = append(info.GPUInfo.GPUs, gpuDevice{Name: aws.ToString(x.Name), Manufacturer: aws.ToString(x.Manufacturer),
				Count: int64(aws.ToInt32(x.Count)), MemoryInfo: sizeInMiB{int64(aws.ToInt32(x.MemoryInfo.SizeInMiB))}})
		}
	}
	if a := d.NeuronInfo; a != nil {
		info.NeuronInfo = &neuronInfo{}
		for _, x := range a.NeuronDevices {
			dev := neuronDevice{Name: aws.ToString(x.Name), Count: int64(aws.ToInt32(x.Count))}
			dev.CoreInfo.Count, dev.CoreInfo.Version = int64(aws.ToInt32(x.CoreInfo.Count)), int64(aws.ToInt32(x.CoreInfo.Version))
			info.NeuronInfo.NeuronDevices = append(info.NeuronInfo.NeuronDevices, dev)
		}
	}
	if a := d.InferenceAcceleratorInfo; a != nil {
		info.InferenceAcceleratorInfo = &acceleratorInfo{}
		for _, x := range a.Accelerators {
			info.InferenceAcceleratorInfo.Accelerators = append(info.InferenceAcceleratorInfo.Accelerators,
				acceleratorDevice{Name: aws.ToString(x.Name), Manufacturer: aws.ToString(x.Manufacturer), Count: int64(aws.ToInt32(x.Count))})
		}
	}
	if s := d.InstanceStorageInfo; s != nil {
		info.InstanceStorageSupported = true
		info.InstanceStorageInfo = &instanceStorageInfo{TotalSizeInGB: aws.ToInt64(s.TotalSizeInGB), NvmeSupport: string(s.NvmeSupport),
			EncryptionSupport: string(s.EncryptionSupport)}
		for _, x := range s.Disks {
			info.InstanceStorageInfo.Disks = append(info.InstanceStorageInfo.Disks, diskInfo{SizeInGB: aws.ToInt64(x.SizeInGB),
				Count: int64(aws.ToInt32(x.Count)), Type: string(x.Type)})
		}
	}
	return info
}

// strs turns a list of SDK enum values into strings.
func strs[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

func (e *Emulator) instanceType(name string) *instanceTypeInfo {
	return e.byName[name]
}
