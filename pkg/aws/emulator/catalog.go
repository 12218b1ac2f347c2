package emulator

import (
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// instanceTypeInfo is DescribeInstanceTypes' InstanceTypeInfo, with the XML names EC2 uses, plus
// the SIMULATED prices the emulator's Pricing API and spot price history publish.
type instanceTypeInfo struct {
	InstanceType                 string               `xml:"instanceType"`
	CurrentGeneration            bool                 `xml:"currentGeneration"`
	SupportedUsageClasses        []string             `xml:"supportedUsageClasses>item"`
	SupportedVirtualizationTypes []string             `xml:"supportedVirtualizationTypes>item"`
	BareMetal                    bool                 `xml:"bareMetal"`
	Hypervisor                   string               `xml:"hypervisor,omitempty"`
	ProcessorInfo                processorInfo        `xml:"processorInfo"`
	VCPUInfo                     vcpuInfo             `xml:"vCpuInfo"`
	MemoryInfo                   sizeInMiB            `xml:"memoryInfo"`
	InstanceStorageSupported     bool                 `xml:"instanceStorageSupported"`
	InstanceStorageInfo          *instanceStorageInfo `xml:"instanceStorageInfo,omitempty"`
	NetworkInfo                  networkInfo          `xml:"networkInfo"`
	GPUInfo                      *gpuInfo             `xml:"gpuInfo,omitempty"`
	NeuronInfo                   *neuronInfo          `xml:"neuronInfo,omitempty"`
	EBSInfo                      ebsInfo              `xml:"ebsInfo"`
	NitroEnclavesSupport         string               `xml:"nitroEnclavesSupport"`

	onDemandPrice float64
	spotPrices    map[string]float64
	shape         fake.Shape
}

type vcpuInfo struct {
	DefaultVCPUs int64 `xml:"defaultVCpus"`
}

type sizeInMiB struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type processorInfo struct {
	SupportedArchitectures   []string `xml:"supportedArchitectures>item"`
	SustainedClockSpeedInGhz float64  `xml:"sustainedClockSpeedInGhz"`
	Manufacturer             string   `xml:"manufacturer"`
}

type networkInfo struct {
	MaximumNetworkInterfaces     int64         `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards          int64         `xml:"maximumNetworkCards"`
	Ipv4AddressesPerInterface    int64         `xml:"ipv4AddressesPerInterface"`
	DefaultNetworkCardIndex      int64         `xml:"defaultNetworkCardIndex"`
	NetworkCards                 []networkCard `xml:"networkCards>item"`
	EncryptionInTransitSupported bool          `xml:"encryptionInTransitSupported"`
	EfaSupported                 bool          `xml:"efaSupported"`
	EfaInfo                      *efaInfo      `xml:"efaInfo,omitempty"`
}

type efaInfo struct {
	MaximumEfaInterfaces int64 `xml:"maximumEfaInterfaces"`
}

type networkCard struct {
	NetworkCardIndex         int64   `xml:"networkCardIndex"`
	MaximumNetworkInterfaces int64   `xml:"maximumNetworkInterfaces"`
	BaselineBandwidthInGbps  float64 `xml:"baselineBandwidthInGbps"`
}

type gpuInfo struct {
	GPUs                []gpuDevice `xml:"gpus>item"`
	TotalGPUMemoryInMiB int64       `xml:"totalGpuMemoryInMiB"`
}

type gpuDevice struct {
	Name         string    `xml:"name"`
	Manufacturer string    `xml:"manufacturer"`
	Count        int64     `xml:"count"`
	MemoryInfo   sizeInMiB `xml:"memoryInfo"`
}

type neuronInfo struct {
	NeuronDevices                []neuronDevice `xml:"neuronDevices>item"`
	TotalNeuronDeviceMemoryInMiB int64          `xml:"totalNeuronDeviceMemoryInMiB"`
}

type neuronDevice struct {
	Name     string `xml:"name"`
	Count    int64  `xml:"count"`
	CoreInfo struct {
		Count   int64 `xml:"count"`
		Version int64 `xml:"version"`
	} `xml:"coreInfo"`
	MemoryInfo sizeInMiB `xml:"memoryInfo"`
}

type instanceStorageInfo struct {
	TotalSizeInGB     int64      `xml:"totalSizeInGB"`
	Disks             []diskInfo `xml:"disks>item"`
	NvmeSupport       string     `xml:"nvmeSupport"`
	EncryptionSupport string     `xml:"encryptionSupport"`
}

type diskInfo struct {
	SizeInGB int64  `xml:"sizeInGB"`
	Count    int64  `xml:"count"`
	Type     string `xml:"type"`
}

type ebsInfo struct {
	EBSOptimizedSupport string `xml:"ebsOptimizedSupport"`
	EBSOptimizedInfo    struct {
		MaximumBandwidthInMbps int64 `xml:"maximumBandwidthInMbps"`
	} `xml:"ebsOptimizedInfo"`
}

// buildCatalog re-expresses the fake catalog's shapes as EC2 describes instance types, with the
// fake's prices in the region's zones.
func buildCatalog(types []*cloud.InstanceType, firstZone string) []*instanceTypeInfo {
	shapes := map[string]fake.Shape{}
	for _, s := range fake.Shapes() {
		shapes[s.Name] = s
	}
	out := make([]*instanceTypeInfo, 0, len(types))
	for _, it := range types {
		info := describe(shapes[it.Name])
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

// describe is the shape as DescribeInstanceTypes returns it.
func describe(s fake.Shape) *instanceTypeInfo {
	info := &instanceTypeInfo{
		InstanceType:                 s.Name,
		CurrentGeneration:            true,
		SupportedUsageClasses:        []string{"on-demand", "spot"},
		SupportedVirtualizationTypes: []string{"hvm"},
		BareMetal:                    s.BareMetal,
		Hypervisor:                   s.Hypervisor,
		NitroEnclavesSupport:         "unsupported",
		VCPUInfo:                     vcpuInfo{DefaultVCPUs: s.VCPUs},
		MemoryInfo:                   sizeInMiB{SizeInMiB: s.MemoryMiB},
		spotPrices:                   map[string]float64{},
		shape:                        s,
	}
	arch := map[string]string{karpv1.ArchitectureAmd64: "x86_64", karpv1.ArchitectureArm64: "arm64"}[s.Arch]
	info.ProcessorInfo = processorInfo{SupportedArchitectures: []string{arch}, SustainedClockSpeedInGhz: fake.CPUClockGHz(s.CPUVendor),
		Manufacturer: cpuManufacturers[s.CPUVendor]}
	n := &info.NetworkInfo
	n.MaximumNetworkInterfaces, n.MaximumNetworkCards, n.Ipv4AddressesPerInterface = s.ENIs*s.NetworkCards, s.NetworkCards, s.IPsPerENI
	n.EncryptionInTransitSupported = s.EncryptionInTransit
	for i := int64(0); i < s.NetworkCards; i++ {
		n.NetworkCards = append(n.NetworkCards, networkCard{NetworkCardIndex: i, MaximumNetworkInterfaces: s.ENIs,
			BaselineBandwidthInGbps: float64(s.BandwidthMbps) / 1000})
	}
	if s.EFAInterfaces > 0 {
		n.EfaSupported, n.EfaInfo = true, &efaInfo{MaximumEfaInterfaces: s.EFAInterfaces}
	}
	info.EBSInfo.EBSOptimizedSupport = "default"
	info.EBSInfo.EBSOptimizedInfo.MaximumBandwidthInMbps = s.EBSBandwidthMbps
	if g := s.GPU; g != nil {
		info.GPUInfo = &gpuInfo{GPUs: []gpuDevice{{Name: g.Name, Manufacturer: g.Manufacturer, Count: g.Count, MemoryInfo: sizeInMiB{g.MemoryMiB}}},
			TotalGPUMemoryInMiB: g.Count * g.MemoryMiB}
	}
	if a := s.Neuron; a != nil {
		dev := neuronDevice{Name: a.Name, Count: a.Count, MemoryInfo: sizeInMiB{a.MemoryMiB}}
		dev.CoreInfo.Count, dev.CoreInfo.Version = a.CoresPerDevice, 2
		info.NeuronInfo = &neuronInfo{NeuronDevices: []neuronDevice{dev}, TotalNeuronDeviceMemoryInMiB: a.Count * a.MemoryMiB}
	}
	if d := s.LocalDisks; d != nil {
		store := &instanceStorageInfo{TotalSizeInGB: d.TotalGB(), Disks: []diskInfo{{SizeInGB: d.SizeGB, Count: d.Count, Type: "ssd"}},
			NvmeSupport: "required", EncryptionSupport: "required"}
		if !d.NVMe {
			store.Disks[0].Type, store.NvmeSupport, store.EncryptionSupport = "hdd", "unsupported", "unsupported"
		}
		info.InstanceStorageSupported, info.InstanceStorageInfo = true, store
	}
	return info
}

// cpuManufacturers are the processor makers as DescribeInstanceTypes spells them.
var cpuManufacturers = map[string]string{"intel": "Intel", "amd": "AMD", "aws": "AWS"}

func (e *Emulator) instanceType(name string) *instanceTypeInfo {
	for _, it := range e.catalog {
		if it.InstanceType == name {
			return it
		}
	}
	return nil
}
