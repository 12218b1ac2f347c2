package emulator

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// instanceTypeInfo is DescribeInstanceTypes' InstanceTypeInfo, with the XML names EC2 uses, plus
// the SIMULATED prices the emulator's Pricing API and spot price history publish.
type instanceTypeInfo struct {
	InstanceType                 string        `xml:"instanceType"`
	CurrentGeneration            bool          `xml:"currentGeneration"`
	SupportedUsageClasses        []string      `xml:"supportedUsageClasses>item"`
	SupportedVirtualizationTypes []string      `xml:"supportedVirtualizationTypes>item"`
	BareMetal                    bool          `xml:"bareMetal"`
	Hypervisor                   string        `xml:"hypervisor"`
	ProcessorInfo                processorInfo `xml:"processorInfo"`
	VCPUInfo                     struct {
		DefaultVCPUs int64 `xml:"defaultVCpus"`
	} `xml:"vCpuInfo"`
	MemoryInfo struct {
		SizeInMiB int64 `xml:"sizeInMiB"`
	} `xml:"memoryInfo"`
	NetworkInfo          networkInfo `xml:"networkInfo"`
	GPUInfo              *gpuInfo    `xml:"gpuInfo,omitempty"`
	EBSInfo              ebsInfo     `xml:"ebsInfo"`
	NitroEnclavesSupport string      `xml:"nitroEnclavesSupport"`

	onDemandPrice float64
	spotPrices    map[string]float64
	gpus          int64
}

type processorInfo struct {
	SupportedArchitectures   []string `xml:"supportedArchitectures>item"`
	SustainedClockSpeedInGhz float64  `xml:"sustainedClockSpeedInGhz"`
	Manufacturer             string   `xml:"manufacturer"`
}

type networkInfo struct {
	MaximumNetworkInterfaces     int64         `xml:"maximumNetworkInterfaces"`
	Ipv4AddressesPerInterface    int64         `xml:"ipv4AddressesPerInterface"`
	DefaultNetworkCardIndex      int64         `xml:"defaultNetworkCardIndex"`
	NetworkCards                 []networkCard `xml:"networkCards>item"`
	EncryptionInTransitSupported bool          `xml:"encryptionInTransitSupported"`
	EfaSupported                 bool          `xml:"efaSupported"`
}

type networkCard struct {
	NetworkCardIndex         int64   `xml:"networkCardIndex"`
	MaximumNetworkInterfaces int64   `xml:"maximumNetworkInterfaces"`
	BaselineBandwidthInGbps  float64 `xml:"baselineBandwidthInGbps"`
}

type gpuInfo struct {
	GPUs []gpuDevice `xml:"gpus>item"`
}

type gpuDevice struct {
	Name         string `xml:"name"`
	Manufacturer string `xml:"manufacturer"`
	Count        int64  `xml:"count"`
	MemoryInfo   struct {
		SizeInMiB int64 `xml:"sizeInMiB"`
	} `xml:"memoryInfo"`
}

type ebsInfo struct {
	EBSOptimizedSupport string `xml:"ebsOptimizedSupport"`
	EBSOptimizedInfo    struct {
		MaximumBandwidthInMbps int64 `xml:"maximumBandwidthInMbps"`
	} `xml:"ebsOptimizedInfo"`
}

// enisBySize are the ENI limits behind the fake catalog's max-pods (enis × (ips − 1) + 2), which
// the fake publishes only as a pod count.
var enisBySize = map[string][2]int64{
	"large": {3, 10}, "xlarge": {4, 15}, "2xlarge": {4, 15}, "4xlarge": {8, 30},
	"8xlarge": {8, 30}, "12xlarge": {8, 30}, "16xlarge": {15, 50}, "24xlarge": {15, 50},
}

// SIMULATED processor details the fake catalog does not carry.
var cpus = map[string]struct {
	manufacturer string
	ghz          float64
}{"intel": {"Intel", 3.1}, "amd": {"AMD", 3.3}, "aws": {"AWS", 2.5}}

// buildCatalog re-expresses the fake catalog as EC2 describes instance types.
func buildCatalog(types []*cloud.InstanceType, firstZone string) []*instanceTypeInfo {
	out := make([]*instanceTypeInfo, 0, len(types))
	for _, it := range types {
		l := it.Labels
		info := &instanceTypeInfo{
			InstanceType:                 it.Name,
			CurrentGeneration:            true,
			SupportedUsageClasses:        []string{"on-demand", "spot"},
			SupportedVirtualizationTypes: []string{"hvm"},
			Hypervisor:                   l[awsv1.LabelInstanceHypervisor],
			NitroEnclavesSupport:         "unsupported",
			spotPrices:                   map[string]float64{},
		}
		arch := "x86_64"
		if l[corev1.LabelArchStable] == karpv1.ArchitectureArm64 {
			arch = "arm64"
		}
		cpu := cpus[l[awsv1.LabelInstanceCPUManufacturer]]
		info.ProcessorInfo = processorInfo{SupportedArchitectures: []string{arch}, SustainedClockSpeedInGhz: cpu.ghz, Manufacturer: cpu.manufacturer}
		info.VCPUInfo.DefaultVCPUs = atoi(l[awsv1.LabelInstanceCPU])
		info.MemoryInfo.SizeInMiB = atoi(l[awsv1.LabelInstanceMemory])
		enis := enisBySize[l[awsv1.LabelInstanceSize]]
		info.NetworkInfo = networkInfo{
			MaximumNetworkInterfaces:  enis[0],
			Ipv4AddressesPerInterface: enis[1],
			NetworkCards: []networkCard{{MaximumNetworkInterfaces: enis[0],
				BaselineBandwidthInGbps: float64(atoi(l[awsv1.LabelInstanceNetworkBandwidth])) / 1000}},
		}
		// SIMULATED: EBS bandwidth grows with size, as it does on EC2, capped like Nitro's.
		info.EBSInfo.EBSOptimizedSupport = "default"
		info.EBSInfo.EBSOptimizedInfo.MaximumBandwidthInMbps = min(info.VCPUInfo.DefaultVCPUs*625, 20000)
		if n := atoi(l[awsv1.LabelInstanceGPUCount]); n > 0 {
			dev := gpuDevice{Name: strings.ToUpper(l[awsv1.LabelInstanceGPUName]), Manufacturer: strings.ToUpper(l[awsv1.LabelInstanceGPUManufacturer]), Count: n}
			dev.MemoryInfo.SizeInMiB = atoi(l[awsv1.LabelInstanceGPUMemory])
			info.GPUInfo = &gpuInfo{GPUs: []gpuDevice{dev}}
			info.gpus = n
		}
		for _, o := range it.Offerings {
			switch {
			case o.CapacityType == karpv1.CapacityTypeSpot:
				info.spotPrices[o.Zone] = o.PricePerHour
			// On-demand prices do not vary by zone on EC2; the fake's reference zone has none
			// of its invented zone premium.
			case o.CapacityType == karpv1.CapacityTypeOnDemand && (info.onDemandPrice == 0 || o.Zone == firstZone):
				info.onDemandPrice = o.PricePerHour
			}
		}
		out = append(out, info)
	}
	return out
}

func (e *Emulator) instanceType(name string) *instanceTypeInfo {
	for _, it := range e.catalog {
		if it.InstanceType == name {
			return it
		}
	}
	return nil
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
