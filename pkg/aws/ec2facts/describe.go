package ec2facts

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Describe is the type as DescribeInstanceTypes answers for it. What the snapshot does not hold
// is filled by rule (docs/reference/ec2-catalog.md): every type is of the current generation and
// HVM, and has no Nitro Enclaves; each network card carries an equal share of the instance's
// bandwidth; the local NVMe store is one disk of the whole size; a type without a published EBS
// bandwidth is EBS-optimized on request only.
func Describe(t *Type) ec2types.InstanceTypeInfo {
	info := ec2types.InstanceTypeInfo{
		InstanceType:                 ec2types.InstanceType(t.Name),
		CurrentGeneration:            aws.Bool(true),
		SupportedVirtualizationTypes: []ec2types.VirtualizationType{ec2types.VirtualizationTypeHvm},
		BareMetal:                    aws.Bool(t.BareMetal),
		Hypervisor:                   ec2types.InstanceTypeHypervisor(t.Hypervisor),
		NitroEnclavesSupport:         ec2types.NitroEnclavesSupportUnsupported,
		VCpuInfo:                     &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(t.VCPUs)},
		MemoryInfo:                   &ec2types.MemoryInfo{SizeInMiB: aws.Int64(t.MemoryMiB)},
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{ec2types.ArchitectureType(t.Arch)},
			Manufacturer: aws.String(t.CPUMaker)},
		EbsInfo: &ec2types.EbsInfo{EbsOptimizedSupport: ec2types.EbsOptimizedSupportSupported},
	}
	for _, u := range t.UsageClasses {
		info.SupportedUsageClasses = append(info.SupportedUsageClasses, ec2types.UsageClassType(u))
	}
	if t.ClockGHz > 0 {
		info.ProcessorInfo.SustainedClockSpeedInGhz = aws.Float64(t.ClockGHz)
	}
	n := &ec2types.NetworkInfo{
		MaximumNetworkInterfaces:     aws.Int32(t.ENIs),
		MaximumNetworkCards:          aws.Int32(int32(len(t.Cards))),
		Ipv4AddressesPerInterface:    aws.Int32(t.IPv4PerENI),
		DefaultNetworkCardIndex:      aws.Int32(t.DefaultCard),
		EncryptionInTransitSupported: aws.Bool(t.EncryptionInTransit),
		EfaSupported:                 aws.Bool(t.EFAInterfaces > 0),
	}
	for _, c := range t.Cards {
		n.NetworkCards = append(n.NetworkCards, ec2types.NetworkCardInfo{NetworkCardIndex: aws.Int32(c.Index),
			MaximumNetworkInterfaces: aws.Int32(c.ENIs), BaselineBandwidthInGbps: aws.Float64(float64(t.BandwidthMbps) / float64(len(t.Cards)) / 1000)})
	}
	if t.EFAInterfaces > 0 {
		n.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(t.EFAInterfaces)}
	}
	info.NetworkInfo = n
	if t.EBSBandwidthMbps > 0 {
		info.EbsInfo.EbsOptimizedSupport = ec2types.EbsOptimizedSupportDefault
		info.EbsInfo.EbsOptimizedInfo = &ec2types.EbsOptimizedInfo{MaximumBandwidthInMbps: aws.Int32(int32(t.EBSBandwidthMbps))}
	}
	if g := t.GPU; g != nil {
		info.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{Name: aws.String(g.Name), Manufacturer: aws.String(g.Maker),
			Count: aws.Int32(g.Count), MemoryInfo: &ec2types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(g.MemoryMiB)}}},
			TotalGpuMemoryInMiB: aws.Int32(g.Count * g.MemoryMiB)}
	}
	if a := t.Neuron; a != nil {
		info.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{Name: aws.String(a.Name), Count: aws.Int32(a.Count),
			CoreInfo: &ec2types.NeuronDeviceCoreInfo{Count: aws.Int32(a.CoresPerDevice), Version: aws.Int32(2)}}}}
	}
	if a := t.Accelerator; a != nil {
		info.InferenceAcceleratorInfo = &ec2types.InferenceAcceleratorInfo{Accelerators: []ec2types.InferenceDeviceInfo{{
			Name: aws.String(a.Name), Manufacturer: aws.String(a.Maker), Count: aws.Int32(a.Count)}}}
	}
	if t.LocalNVMeGB > 0 {
		info.InstanceStorageSupported = aws.Bool(true)
		info.InstanceStorageInfo = &ec2types.InstanceStorageInfo{TotalSizeInGB: aws.Int64(t.LocalNVMeGB),
			Disks:       []ec2types.DiskInfo{{SizeInGB: aws.Int64(t.LocalNVMeGB), Count: aws.Int32(1), Type: ec2types.DiskTypeSsd}},
			NvmeSupport: ec2types.EphemeralNvmeSupportRequired, EncryptionSupport: ec2types.InstanceStorageEncryptionSupportRequired}
	}
	return info
}
