package emulator

// instanceTypeInfo is DescribeInstanceTypes' InstanceTypeInfo, with the XML names EC2 uses, plus
// the prices the emulator's Pricing API and spot price history publish (see catalog.go).
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
	InferenceAcceleratorInfo     *acceleratorInfo     `xml:"inferenceAcceleratorInfo,omitempty"`
	EBSInfo                      ebsInfo              `xml:"ebsInfo"`
	NitroEnclavesSupport         string               `xml:"nitroEnclavesSupport"`

	onDemandPrice float64
	spotPrices    map[string]float64
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

type acceleratorInfo struct {
	Accelerators []acceleratorDevice `xml:"accelerators>item"`
}

type acceleratorDevice struct {
	Name         string `xml:"name"`
	Manufacturer string `xml:"manufacturer"`
	Count        int64  `xml:"count"`
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
