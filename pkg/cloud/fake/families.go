package fake

// The SIMULATED catalog, family by family. Each row gives what varies between families (processor,
// memory per vCPU, which sizes exist, instance-store disks, EFA, accelerators, price adjustments);
// the rules in shapes.go derive the rest (ENIs, bandwidth, EBS bandwidth) from the vCPU count, as
// EC2's own tables roughly do. Shapes follow the public EC2 instance type pages; prices are
// invented (see pricing.go). Sizes below large are left out on purpose: the planners' tests and
// benchmarks are written against a catalog whose smallest general-purpose type has 2 vCPUs and
// 8 GiB or more, and the sub-large sizes would change every cheapest choice they assert.

// Size ladders, smallest first. The vCPUs of each size are in sizeVCPUs; "metal" is as large as
// the family's largest virtualised size (metalVCPUs says otherwise).
var (
	ladder5    = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "metal"}
	ladderC5   = []string{"large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge", "24xlarge", "metal"}
	ladderC5n  = []string{"large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "18xlarge", "metal"}
	ladder6i   = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "32xlarge", "metal"}
	ladder7i   = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge", "metal-24xl", "metal-48xl"}
	ladderGrav = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "metal"}
	ladderGN   = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"}
	ladderT    = []string{"large", "xlarge", "2xlarge"}
)

var sizeVCPUs = map[string]int64{
	"large": 2, "xlarge": 4, "2xlarge": 8, "3xlarge": 12, "4xlarge": 16, "6xlarge": 24, "8xlarge": 32, "9xlarge": 36,
	"12xlarge": 48, "16xlarge": 64, "18xlarge": 72, "24xlarge": 96, "32xlarge": 128, "48xlarge": 192,
	"metal-24xl": 96, "metal-48xl": 192,
}

// disk is a size's instance store: count disks of sizeGB each.
type disk struct{ count, sizeGB int64 }

// Instance-store ladders shared by the "d" variants of a generation.
var (
	disksC5d = map[string]disk{"large": {1, 50}, "xlarge": {1, 100}, "2xlarge": {1, 200}, "4xlarge": {1, 400},
		"9xlarge": {1, 900}, "12xlarge": {2, 900}, "18xlarge": {2, 900}, "24xlarge": {4, 900}, "metal": {4, 900}}
	disks5d = map[string]disk{"large": {1, 75}, "xlarge": {1, 150}, "2xlarge": {1, 300}, "4xlarge": {2, 300},
		"8xlarge": {2, 600}, "12xlarge": {2, 900}, "16xlarge": {4, 600}, "24xlarge": {4, 900}, "metal": {4, 900}}
	disks6id = map[string]disk{"large": {1, 118}, "xlarge": {1, 237}, "2xlarge": {1, 474}, "4xlarge": {1, 950},
		"8xlarge": {1, 1900}, "12xlarge": {2, 1425}, "16xlarge": {2, 1900}, "24xlarge": {4, 1425}, "32xlarge": {4, 1900}, "metal": {4, 1900}}
	disksGD = map[string]disk{"large": {1, 118}, "xlarge": {1, 237}, "2xlarge": {1, 474}, "4xlarge": {1, 950},
		"8xlarge": {1, 1900}, "12xlarge": {2, 1425}, "16xlarge": {2, 1900}, "metal": {2, 1900}}
)

// accelerator is a GPU or a Neuron device, as DescribeInstanceTypes names it.
type accelerator struct {
	name, manufacturer string
	memoryMiB          int64
	// cores per device; Neuron devices only.
	cores int64
}

var (
	gpuT4    = accelerator{name: "T4", manufacturer: "NVIDIA", memoryMiB: 16384}
	gpuA10G  = accelerator{name: "A10G", manufacturer: "NVIDIA", memoryMiB: 24576}
	gpuL4    = accelerator{name: "L4", manufacturer: "NVIDIA", memoryMiB: 22888}
	gpuA100  = accelerator{name: "A100", manufacturer: "NVIDIA", memoryMiB: 40960}
	gpuH100  = accelerator{name: "H100", manufacturer: "NVIDIA", memoryMiB: 81920}
	gpuV520  = accelerator{name: "Radeon Pro V520", manufacturer: "AMD", memoryMiB: 8192}
	neuronI2 = accelerator{name: "Inferentia2", manufacturer: "AWS", memoryMiB: 32768, cores: 2}
	neuronT1 = accelerator{name: "Trainium", manufacturer: "AWS", memoryMiB: 32768, cores: 2}
)

// family is one row of the catalog.
type family struct {
	name      string
	arch      string // amd64 or arm64
	cpuVendor string // intel, amd or aws
	// mibPerCPU is memory per vCPU; memMiB overrides it per size (accelerated families).
	mibPerCPU int64
	memMiB    map[string]int64
	sizes     []string
	// vcpus overrides sizeVCPUs per size (metal of families whose metal is not their largest size).
	vcpus map[string]int64
	disks map[string]disk
	// hdd marks instance stores of hard disks, which are not NVMe.
	hdd bool
	// efa lists the sizes that support EFA; cards sizes with several network cards (one EFA each).
	efa   []string
	cards map[string]int64
	// networkFactor multiplies the baseline bandwidth (the "n" network-optimised variants).
	networkFactor int64
	// xen marks families on the older Xen hypervisor.
	xen bool
	// Accelerators per size: gpu (with gpus counts) or neuron (with neurons counts).
	gpu     *accelerator
	gpus    map[string]int64
	neuron  *accelerator
	neurons map[string]int64
	// priceFactor adjusts the category's per-vCPU rate (instance store, network, vendor); prices
	// replaces the rule for accelerated families whose price is not proportional to vCPUs.
	priceFactor float64
	prices      map[string]float64
}

const (
	gib = 1024
	// price factors of the variants, relative to the base family of the same generation.
	instanceStorePremium = 1.2
	networkPremium       = 1.25
)

var families = []family{
	// Compute optimised.
	{name: "c5", arch: "amd64", cpuVendor: "intel", mibPerCPU: 2 * gib, sizes: ladderC5},
	{name: "c5d", arch: "amd64", cpuVendor: "intel", mibPerCPU: 2 * gib, sizes: ladderC5, disks: disksC5d, priceFactor: instanceStorePremium},
	{name: "c5n", arch: "amd64", cpuVendor: "intel", mibPerCPU: 2688, sizes: ladderC5n, vcpus: map[string]int64{"metal": 72},
		efa: []string{"18xlarge", "metal"}, networkFactor: 4, priceFactor: networkPremium},
	{name: "c6i", arch: "amd64", cpuVendor: "intel", mibPerCPU: 2 * gib, sizes: ladder6i, efa: []string{"32xlarge", "metal"}},
	{name: "c6id", arch: "amd64", cpuVendor: "intel", mibPerCPU: 2 * gib, sizes: ladder6i, disks: disks6id, efa: []string{"32xlarge", "metal"}, priceFactor: instanceStorePremium},
	{name: "c6g", arch: "arm64", cpuVendor: "aws", mibPerCPU: 2 * gib, sizes: ladderGrav},
	{name: "c6gd", arch: "arm64", cpuVendor: "aws", mibPerCPU: 2 * gib, sizes: ladderGrav, disks: disksGD, priceFactor: instanceStorePremium},
	{name: "c6gn", arch: "arm64", cpuVendor: "aws", mibPerCPU: 2 * gib, sizes: ladderGN, efa: []string{"16xlarge"}, networkFactor: 4, priceFactor: networkPremium},
	{name: "c7i", arch: "amd64", cpuVendor: "intel", mibPerCPU: 2 * gib, sizes: ladder7i, efa: []string{"48xlarge", "metal-48xl"}},
	{name: "c7a", arch: "amd64", cpuVendor: "amd", mibPerCPU: 2 * gib, sizes: ladder7i, efa: []string{"48xlarge", "metal-48xl"}, priceFactor: 1.15},
	{name: "c7g", arch: "arm64", cpuVendor: "aws", mibPerCPU: 2 * gib, sizes: ladderGrav, efa: []string{"16xlarge", "metal"}},
	{name: "c7gd", arch: "arm64", cpuVendor: "aws", mibPerCPU: 2 * gib, sizes: ladderGrav, disks: disksGD, efa: []string{"16xlarge", "metal"}, priceFactor: instanceStorePremium},
	{name: "c7gn", arch: "arm64", cpuVendor: "aws", mibPerCPU: 2 * gib, sizes: ladderGN, efa: []string{"16xlarge"}, networkFactor: 4, priceFactor: networkPremium},

	// General purpose.
	{name: "m5", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: ladder5},
	{name: "m5d", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: ladder5, disks: disks5d, priceFactor: instanceStorePremium},
	{name: "m5n", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: ladder5, efa: []string{"24xlarge", "metal"}, networkFactor: 4, priceFactor: networkPremium},
	{name: "m6i", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: ladder6i, efa: []string{"32xlarge", "metal"}},
	{name: "m6id", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: ladder6i, disks: disks6id, efa: []string{"32xlarge", "metal"}, priceFactor: instanceStorePremium},
	{name: "m6g", arch: "arm64", cpuVendor: "aws", mibPerCPU: 4 * gib, sizes: ladderGrav},
	{name: "m6gd", arch: "arm64", cpuVendor: "aws", mibPerCPU: 4 * gib, sizes: ladderGrav, disks: disksGD, priceFactor: instanceStorePremium},
	{name: "m7i", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: ladder7i, efa: []string{"48xlarge", "metal-48xl"}},
	{name: "m7i-flex", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge"}, priceFactor: 0.95},
	{name: "m7a", arch: "amd64", cpuVendor: "amd", mibPerCPU: 4 * gib, sizes: ladder7i, efa: []string{"48xlarge", "metal-48xl"}, priceFactor: 1.15},
	{name: "m7g", arch: "arm64", cpuVendor: "aws", mibPerCPU: 4 * gib, sizes: ladderGrav, efa: []string{"16xlarge", "metal"}},
	{name: "m7gd", arch: "arm64", cpuVendor: "aws", mibPerCPU: 4 * gib, sizes: ladderGrav, disks: disksGD, efa: []string{"16xlarge", "metal"}, priceFactor: instanceStorePremium},

	// Memory optimised.
	{name: "r5", arch: "amd64", cpuVendor: "intel", mibPerCPU: 8 * gib, sizes: ladder5},
	{name: "r5d", arch: "amd64", cpuVendor: "intel", mibPerCPU: 8 * gib, sizes: ladder5, disks: disks5d, priceFactor: instanceStorePremium},
	{name: "r6i", arch: "amd64", cpuVendor: "intel", mibPerCPU: 8 * gib, sizes: ladder6i, efa: []string{"32xlarge", "metal"}},
	{name: "r6id", arch: "amd64", cpuVendor: "intel", mibPerCPU: 8 * gib, sizes: ladder6i, disks: disks6id, efa: []string{"32xlarge", "metal"}, priceFactor: instanceStorePremium},
	{name: "r6g", arch: "arm64", cpuVendor: "aws", mibPerCPU: 8 * gib, sizes: ladderGrav},
	{name: "r6gd", arch: "arm64", cpuVendor: "aws", mibPerCPU: 8 * gib, sizes: ladderGrav, disks: disksGD, priceFactor: instanceStorePremium},
	{name: "r7i", arch: "amd64", cpuVendor: "intel", mibPerCPU: 8 * gib, sizes: ladder7i, efa: []string{"48xlarge", "metal-48xl"}},
	{name: "r7g", arch: "arm64", cpuVendor: "aws", mibPerCPU: 8 * gib, sizes: ladderGrav, efa: []string{"16xlarge", "metal"}},
	{name: "r7gd", arch: "arm64", cpuVendor: "aws", mibPerCPU: 8 * gib, sizes: ladderGrav, disks: disksGD, efa: []string{"16xlarge", "metal"}, priceFactor: instanceStorePremium},
	{name: "x2gd", arch: "arm64", cpuVendor: "aws", mibPerCPU: 16 * gib, sizes: ladderGrav, disks: disksGD},
	{name: "x2idn", arch: "amd64", cpuVendor: "intel", mibPerCPU: 16 * gib, sizes: []string{"16xlarge", "24xlarge", "32xlarge", "metal"},
		disks: map[string]disk{"16xlarge": {1, 1900}, "24xlarge": {2, 1425}, "32xlarge": {2, 1900}, "metal": {2, 1900}},
		efa:   []string{"32xlarge", "metal"}, networkFactor: 2, priceFactor: 1.25},
	{name: "x2iedn", arch: "amd64", cpuVendor: "intel", mibPerCPU: 32 * gib, sizes: []string{"xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "24xlarge", "32xlarge", "metal"},
		disks: map[string]disk{"xlarge": {1, 118}, "2xlarge": {1, 237}, "4xlarge": {1, 475}, "8xlarge": {1, 950}, "16xlarge": {1, 1900},
			"24xlarge": {2, 1425}, "32xlarge": {2, 1900}, "metal": {2, 1900}},
		efa: []string{"32xlarge", "metal"}, networkFactor: 2, priceFactor: 2.5},

	// Storage optimised: NVMe (i) and hard disks (d).
	{name: "i3", arch: "amd64", cpuVendor: "intel", mibPerCPU: 7808, sizes: []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "metal"},
		vcpus: map[string]int64{"metal": 72}, xen: true,
		disks: map[string]disk{"large": {1, 475}, "xlarge": {1, 950}, "2xlarge": {1, 1900}, "4xlarge": {2, 1900}, "8xlarge": {4, 1900}, "16xlarge": {8, 1900}, "metal": {8, 1900}}},
	{name: "i3en", arch: "amd64", cpuVendor: "intel", mibPerCPU: 8 * gib, sizes: []string{"large", "xlarge", "2xlarge", "3xlarge", "6xlarge", "12xlarge", "24xlarge", "metal"},
		disks: map[string]disk{"large": {1, 1250}, "xlarge": {1, 2500}, "2xlarge": {2, 2500}, "3xlarge": {1, 7500}, "6xlarge": {2, 7500},
			"12xlarge": {4, 7500}, "24xlarge": {8, 7500}, "metal": {8, 7500}},
		efa: []string{"24xlarge", "metal"}, networkFactor: 2, priceFactor: 1.45},
	{name: "i4i", arch: "amd64", cpuVendor: "intel", mibPerCPU: 8 * gib, sizes: ladder6i,
		disks: map[string]disk{"large": {1, 468}, "xlarge": {1, 937}, "2xlarge": {1, 1875}, "4xlarge": {1, 3750}, "8xlarge": {2, 3750},
			"12xlarge": {3, 3750}, "16xlarge": {4, 3750}, "24xlarge": {6, 3750}, "32xlarge": {8, 3750}, "metal": {8, 3750}},
		efa: []string{"32xlarge", "metal"}, priceFactor: 1.1},
	{name: "i4g", arch: "arm64", cpuVendor: "aws", mibPerCPU: 8 * gib, sizes: []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"},
		disks: map[string]disk{"large": {1, 468}, "xlarge": {1, 937}, "2xlarge": {1, 1875}, "4xlarge": {1, 3750}, "8xlarge": {2, 3750}, "16xlarge": {4, 3750}},
		efa:   []string{"16xlarge"}, priceFactor: 1.24},
	{name: "d3", arch: "amd64", cpuVendor: "intel", mibPerCPU: 8 * gib, sizes: []string{"xlarge", "2xlarge", "4xlarge", "8xlarge"}, hdd: true,
		disks: map[string]disk{"xlarge": {3, 2000}, "2xlarge": {6, 2000}, "4xlarge": {12, 2000}, "8xlarge": {24, 2000}}},
	{name: "d3en", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: []string{"xlarge", "2xlarge", "4xlarge", "6xlarge", "8xlarge", "12xlarge"}, hdd: true,
		disks:         map[string]disk{"xlarge": {2, 14000}, "2xlarge": {4, 14000}, "4xlarge": {8, 14000}, "6xlarge": {12, 14000}, "8xlarge": {16, 14000}, "12xlarge": {24, 14000}},
		networkFactor: 2, priceFactor: 1.05},

	// Burstable.
	{name: "t3", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, sizes: ladderT},
	{name: "t3a", arch: "amd64", cpuVendor: "amd", mibPerCPU: 4 * gib, sizes: ladderT, priceFactor: 0.9},
	{name: "t4g", arch: "arm64", cpuVendor: "aws", mibPerCPU: 4 * gib, sizes: ladderT},

	// Accelerated: NVIDIA, AMD, Inferentia and Trainium.
	{name: "g4dn", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, gpu: &gpuT4,
		sizes: []string{"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "metal"},
		gpus:  map[string]int64{"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "12xlarge": 4, "16xlarge": 1, "metal": 8},
		disks: map[string]disk{"xlarge": {1, 125}, "2xlarge": {1, 225}, "4xlarge": {1, 225}, "8xlarge": {1, 900}, "12xlarge": {1, 900}, "16xlarge": {1, 900}, "metal": {2, 900}},
		efa:   []string{"8xlarge", "12xlarge", "16xlarge", "metal"}, networkFactor: 2,
		prices: map[string]float64{"xlarge": 0.526, "2xlarge": 0.752, "4xlarge": 1.204, "8xlarge": 2.176, "12xlarge": 3.912, "16xlarge": 4.352, "metal": 7.824}},
	{name: "g4ad", arch: "amd64", cpuVendor: "amd", mibPerCPU: 4 * gib, gpu: &gpuV520,
		sizes:  []string{"xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"},
		gpus:   map[string]int64{"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 2, "16xlarge": 4},
		disks:  map[string]disk{"xlarge": {1, 150}, "2xlarge": {1, 300}, "4xlarge": {1, 600}, "8xlarge": {1, 1200}, "16xlarge": {1, 2400}},
		prices: map[string]float64{"xlarge": 0.3785, "2xlarge": 0.5412, "4xlarge": 0.867, "8xlarge": 1.734, "16xlarge": 3.468}},
	// g5 keeps the rule price (per vCPU plus per GPU) the catalog began with.
	{name: "g5", arch: "amd64", cpuVendor: "amd", mibPerCPU: 4 * gib, gpu: &gpuA10G,
		sizes: []string{"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
		gpus:  map[string]int64{"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "12xlarge": 4, "16xlarge": 1, "24xlarge": 4, "48xlarge": 8},
		disks: map[string]disk{"xlarge": {1, 250}, "2xlarge": {1, 450}, "4xlarge": {1, 600}, "8xlarge": {1, 900}, "12xlarge": {1, 3800},
			"16xlarge": {1, 1900}, "24xlarge": {1, 3800}, "48xlarge": {2, 3800}},
		efa: []string{"8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"}},
	{name: "g6", arch: "amd64", cpuVendor: "amd", mibPerCPU: 4 * gib, gpu: &gpuL4,
		sizes: []string{"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
		gpus:  map[string]int64{"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "12xlarge": 4, "16xlarge": 1, "24xlarge": 4, "48xlarge": 8},
		disks: map[string]disk{"xlarge": {1, 250}, "2xlarge": {1, 450}, "4xlarge": {1, 600}, "8xlarge": {2, 450}, "12xlarge": {4, 940},
			"16xlarge": {2, 940}, "24xlarge": {4, 940}, "48xlarge": {8, 940}},
		efa: []string{"8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
		prices: map[string]float64{"xlarge": 0.8048, "2xlarge": 0.9776, "4xlarge": 1.3232, "8xlarge": 2.0144, "12xlarge": 4.6016,
			"16xlarge": 3.3968, "24xlarge": 6.6752, "48xlarge": 13.3504}},
	{name: "p4d", arch: "amd64", cpuVendor: "intel", mibPerCPU: 12 * gib, gpu: &gpuA100, sizes: []string{"24xlarge"},
		gpus: map[string]int64{"24xlarge": 8}, disks: map[string]disk{"24xlarge": {8, 1000}},
		efa: []string{"24xlarge"}, cards: map[string]int64{"24xlarge": 4}, prices: map[string]float64{"24xlarge": 32.7726}},
	{name: "p5", arch: "amd64", cpuVendor: "amd", gpu: &gpuH100, sizes: []string{"48xlarge"}, memMiB: map[string]int64{"48xlarge": 2048 * gib},
		gpus: map[string]int64{"48xlarge": 8}, disks: map[string]disk{"48xlarge": {8, 3800}},
		efa: []string{"48xlarge"}, cards: map[string]int64{"48xlarge": 32}, prices: map[string]float64{"48xlarge": 55.04}},
	{name: "inf2", arch: "amd64", cpuVendor: "amd", mibPerCPU: 4 * gib, neuron: &neuronI2,
		sizes:   []string{"xlarge", "8xlarge", "24xlarge", "48xlarge"},
		neurons: map[string]int64{"xlarge": 1, "8xlarge": 1, "24xlarge": 6, "48xlarge": 12},
		prices:  map[string]float64{"xlarge": 0.7582, "8xlarge": 1.9679, "24xlarge": 6.4906, "48xlarge": 12.9813}},
	{name: "trn1", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, neuron: &neuronT1, sizes: []string{"2xlarge", "32xlarge"},
		neurons: map[string]int64{"2xlarge": 1, "32xlarge": 16}, disks: map[string]disk{"2xlarge": {1, 474}, "32xlarge": {4, 1900}},
		efa: []string{"32xlarge"}, cards: map[string]int64{"32xlarge": 8}, prices: map[string]float64{"2xlarge": 1.3438, "32xlarge": 21.50}},
	{name: "trn1n", arch: "amd64", cpuVendor: "intel", mibPerCPU: 4 * gib, neuron: &neuronT1, sizes: []string{"32xlarge"},
		neurons: map[string]int64{"32xlarge": 16}, disks: map[string]disk{"32xlarge": {4, 1900}},
		efa: []string{"32xlarge"}, cards: map[string]int64{"32xlarge": 16}, prices: map[string]float64{"32xlarge": 24.78}},
}
