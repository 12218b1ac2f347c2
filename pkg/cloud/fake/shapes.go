package fake

import (
	"slices"
	"sort"
	"strconv"
)

// Shape is the SIMULATED hardware of one instance type, in the terms DescribeInstanceTypes uses.
// The fake cloud turns it into labels and allocatable; the AWS emulator publishes it as EC2 would,
// so the AWS provider learns the same catalog through the SDK.
type Shape struct {
	Name, Family, Size string
	// Category and Generation are Karpenter's split of the name (m, 5 for m5.large).
	Category, Generation string
	Arch                 string // amd64 or arm64
	CPUVendor            string // intel, amd or aws
	VCPUs, MemoryMiB     int64
	// ENIs and IPsPerENI are the limits of each network card; NetworkCards is how many it has.
	ENIs, IPsPerENI, NetworkCards int64
	// BandwidthMbps is each network card's baseline bandwidth.
	BandwidthMbps, EBSBandwidthMbps int64
	// Hypervisor is nitro or xen, and empty for bare metal.
	Hypervisor          string
	BareMetal           bool
	EncryptionInTransit bool
	// EFAInterfaces is how many EFA interfaces the type takes, one per network card; 0 for none.
	EFAInterfaces int64
	// GPU and Neuron describe the accelerators, with their counts; nil for none.
	GPU, Neuron *Accelerator
	// LocalDisks is the instance store; nil for EBS-only types.
	LocalDisks *LocalDisks
	// OnDemandBase is the hourly on-demand price before the per-zone factor.
	OnDemandBase float64
}

// Accelerator is a kind of GPU or Neuron device and how many a type has.
type Accelerator struct {
	Name, Manufacturer string
	Count, MemoryMiB   int64
	// CoresPerDevice is for Neuron devices.
	CoresPerDevice int64
}

// LocalDisks is an instance store: Count disks of SizeGB each.
type LocalDisks struct {
	Count, SizeGB int64
	NVMe          bool
}

// TotalGB is the size of the whole store.
func (d *LocalDisks) TotalGB() int64 { return d.Count * d.SizeGB }

// enisByVCPU are the per-card ENI limits behind max pods (enis × (ips − 1) + 2), by vCPU count.
var enisByVCPU = map[int64][2]int64{
	2: {3, 10}, 4: {4, 15}, 8: {4, 15}, 12: {8, 30}, 16: {8, 30}, 24: {8, 30}, 32: {8, 30}, 36: {8, 30}, 48: {8, 30},
	64: {15, 50}, 72: {15, 50}, 96: {15, 50}, 128: {15, 50}, 192: {15, 50},
}

// bandwidthByVCPU is the baseline network bandwidth in Mbps for generations up to 5 and from 6
// (newer NICs are faster), by vCPU count.
var bandwidthByVCPU = map[int64][2]int64{
	2: {750, 781}, 4: {1250, 1562}, 8: {2500, 3125}, 12: {3750, 4687}, 16: {5000, 6250}, 24: {7500, 9375},
	32: {10000, 12500}, 36: {10000, 14062}, 48: {12000, 18750}, 64: {20000, 25000}, 72: {25000, 28125},
	96: {25000, 37500}, 128: {50000, 50000}, 192: {50000, 50000},
}

// multiCardBandwidthMbps is each card's bandwidth on the types with several network cards.
const multiCardBandwidthMbps = 100000

// Shapes returns every SIMULATED instance type's hardware, sorted by name.
func Shapes() []Shape {
	var out []Shape
	for _, f := range families {
		for _, size := range f.sizes {
			out = append(out, newShape(f, size))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func newShape(f family, size string) Shape {
	name := f.name + "." + size
	m := familyPattern.FindStringSubmatch(name)
	s := Shape{Name: name, Family: f.name, Size: size, Category: m[1], Generation: m[3], Arch: f.arch, CPUVendor: f.cpuVendor,
		Hypervisor: "nitro", NetworkCards: 1}
	s.VCPUs = sizeVCPUs[size]
	if v, ok := f.vcpus[size]; ok {
		s.VCPUs = v
	} else if size == "metal" {
		s.VCPUs = largestVCPUs(f)
	}
	s.MemoryMiB = s.VCPUs * f.mibPerCPU
	if mem, ok := f.memMiB[size]; ok {
		s.MemoryMiB = mem
	}
	enis := enisByVCPU[s.VCPUs]
	s.ENIs, s.IPsPerENI = enis[0], enis[1]
	gen, _ := strconv.Atoi(s.Generation)
	bw := bandwidthByVCPU[s.VCPUs]
	s.BandwidthMbps = bw[1]
	if gen <= 5 {
		s.BandwidthMbps = bw[0]
	}
	if f.networkFactor > 1 {
		s.BandwidthMbps *= f.networkFactor
	}
	if cards := f.cards[size]; cards > 1 {
		s.NetworkCards, s.BandwidthMbps = cards, multiCardBandwidthMbps
	}
	// SIMULATED: EBS bandwidth grows with size, as it does on EC2, capped like Nitro's.
	s.EBSBandwidthMbps = min(s.VCPUs*625, 20000)
	switch {
	case f.xen:
		s.Hypervisor = "xen"
	}
	if size == "metal" || len(size) > 5 && size[:5] == "metal" {
		s.BareMetal, s.Hypervisor = true, ""
	}
	accelerated := f.gpu != nil || f.neuron != nil
	storage := s.Category == "i" || s.Category == "d" || s.Category == "x"
	s.EncryptionInTransit = !f.xen && ((gen >= 6 && f.arch == "amd64") || gen >= 7 || f.networkFactor > 1 || accelerated || storage)
	if slices.Contains(f.efa, size) {
		s.EFAInterfaces = s.NetworkCards
	}
	if f.gpu != nil {
		s.GPU = &Accelerator{Name: f.gpu.name, Manufacturer: f.gpu.manufacturer, Count: f.gpus[size], MemoryMiB: f.gpu.memoryMiB}
	}
	if f.neuron != nil {
		s.Neuron = &Accelerator{Name: f.neuron.name, Manufacturer: f.neuron.manufacturer, Count: f.neurons[size],
			MemoryMiB: f.neuron.memoryMiB, CoresPerDevice: f.neuron.cores}
	}
	if d, ok := f.disks[size]; ok {
		s.LocalDisks = &LocalDisks{Count: d.count, SizeGB: d.sizeGB, NVMe: !f.hdd}
	}
	s.OnDemandBase = onDemandBase(f, s)
	return s
}

// largestVCPUs is the vCPU count of the family's largest virtualised size, which its metal size
// matches.
func largestVCPUs(f family) int64 {
	var n int64
	for _, size := range f.sizes {
		n = max(n, sizeVCPUs[size])
	}
	return n
}
