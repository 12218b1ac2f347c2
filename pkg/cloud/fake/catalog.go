// Package fake is an in-memory, SIMULATED EC2-like cloud for tests and the sandbox.
//
// Nothing in it is real AWS data. The catalog is generated from a handful of rules that give it the
// shape of EC2 (families, generations, sizes, architectures, ENI-limited pods, Karpenter's overhead
// formulas) so that planning and consolidation face realistic choices, and the prices are made up
// in the same spirit. Do not use any number here to reason about a real bill.
package fake

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Simulated marks everything this package returns: generated instance types and invented prices.
const Simulated = "SIMULATED: generated EC2-shaped catalog with invented prices; not AWS data"

// The one region the fake cloud has, and its zones.
const (
	Region = "us-west-2"
	ZoneA  = "us-west-2a"
	ZoneB  = "us-west-2b"
	ZoneC  = "us-west-2c"
)

// Zones lists the zones every instance type is offered in.
func Zones() []string { return []string{ZoneA, ZoneB, ZoneC} }

// ResourceNvidiaGPU is the extended resource the NVIDIA device plugin advertises.
const ResourceNvidiaGPU corev1.ResourceName = "nvidia.com/gpu"

// Karpenter's defaults for the AWS provider, so that allocatable here matches what Karpenter would
// compute for the same shape (see the c6a.2xlarge worked example in the reference notes).
const (
	vmMemoryOverheadPercent = 0.075
	ephemeralStorageGi      = 20
	evictionMemoryMi        = 100
	kubeReservedEphemeralGi = 1
	evictionEphemeralPct    = 10
)

// Karpenter derives category and generation from the name with this expression
// (computeRequirements in the AWS provider); using it keeps odd names like "u-6tb1" consistent.
var familyPattern = regexp.MustCompile(`(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`)

// Catalog returns the SIMULATED instance types of Region, sorted by name. Each call builds fresh
// values, so callers may change what they get.
func Catalog() []*cloud.InstanceType {
	return catalogIn(Zones())
}

// CatalogIn is Catalog offered in another region's zones (see RegionZones).
func CatalogIn(region string) ([]*cloud.InstanceType, error) {
	zones, err := RegionZones(region)
	if err != nil {
		return nil, err
	}
	return catalogIn(ZoneNames(zones)), nil
}

func catalogIn(zones []string) []*cloud.InstanceType {
	shapes := Shapes()
	out := make([]*cloud.InstanceType, 0, len(shapes))
	for _, s := range shapes {
		out = append(out, newInstanceType(s, zones))
	}
	return out
}

// newInstanceType labels a shape and computes its capacity and overhead as Karpenter does for the
// AWS provider with the default 20 GiB root volume.
func newInstanceType(s Shape, zones []string) *cloud.InstanceType {
	pods := s.ENIs*(s.IPsPerENI-1) + 2
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	labels := map[string]string{
		corev1.LabelInstanceTypeStable:                  s.Name,
		corev1.LabelArchStable:                          s.Arch,
		corev1.LabelOSStable:                            "linux",
		awsv1.LabelInstanceCategory:                     s.Category,
		awsv1.LabelInstanceFamily:                       s.Family,
		awsv1.LabelInstanceGeneration:                   s.Generation,
		awsv1.LabelInstanceSize:                         s.Size,
		awsv1.LabelInstanceCPU:                          itoa(s.VCPUs),
		awsv1.LabelInstanceCPUManufacturer:              s.CPUVendor,
		awsv1.LabelInstanceCPUSustainedClockSpeedMhz:    itoa(int64(math.Round(CPUClockGHz(s.CPUVendor) * 1000))),
		awsv1.LabelInstanceMemory:                       itoa(s.MemoryMiB),
		awsv1.LabelInstanceNetworkBandwidth:             itoa(s.BandwidthMbps),
		awsv1.LabelInstanceEBSBandwidth:                 itoa(s.EBSBandwidthMbps),
		awsv1.LabelInstanceEncryptionInTransitSupported: strconv.FormatBool(s.EncryptionInTransit),
	}
	if s.Hypervisor != "" {
		labels[awsv1.LabelInstanceHypervisor] = s.Hypervisor
	}
	// As the AWS provider: Karpenter's key on every type, the old key on flex types only.
	labels[awsv1.LabelInstanceCapabilityFlex] = strconv.FormatBool(strings.Contains(s.Family, "-flex"))
	if strings.Contains(s.Family, "-flex") {
		labels[awsv1.LabelInstanceCapacityFlex] = "true"
	}
	if d := s.LocalDisks; d != nil && d.NVMe {
		labels[awsv1.LabelInstanceLocalNVME] = itoa(d.TotalGB())
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(s.VCPUs, resource.DecimalSI),
		corev1.ResourceMemory:           mebibytes(usableMemoryMiB(s)),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: gibibytes(ephemeralStorageGi),
	}
	if g := s.GPU; g != nil && g.Count > 0 {
		labels[awsv1.LabelInstanceGPUCount] = itoa(g.Count)
		labels[awsv1.LabelInstanceGPUName] = kebab(g.Name)
		labels[awsv1.LabelInstanceGPUManufacturer] = kebab(g.Manufacturer)
		labels[awsv1.LabelInstanceGPUMemory] = itoa(g.MemoryMiB)
		capacity[GPUResource(g.Manufacturer)] = *resource.NewQuantity(g.Count, resource.DecimalSI)
	}
	if n := s.Neuron; n != nil && n.Count > 0 {
		labels[awsv1.LabelInstanceAcceleratorName] = kebab(n.Name)
		labels[awsv1.LabelInstanceAcceleratorManufacturer] = kebab(n.Manufacturer)
		labels[awsv1.LabelInstanceAcceleratorCount] = itoa(n.Count)
		capacity[awsv1.ResourceAWSNeuron] = *resource.NewQuantity(n.Count, resource.DecimalSI)
		capacity[awsv1.ResourceAWSNeuronCore] = *resource.NewQuantity(n.Count*n.CoresPerDevice, resource.DecimalSI)
	}
	if s.EFAInterfaces > 0 {
		capacity[awsv1.ResourceEFA] = *resource.NewQuantity(s.EFAInterfaces, resource.DecimalSI)
	}
	return &cloud.InstanceType{
		Name:      s.Name,
		Labels:    labels,
		Capacity:  capacity,
		Overhead:  overhead(s.VCPUs, pods),
		Offerings: offerings(s, zones),
	}
}

// GPUResource is the extended resource the manufacturer's device plugin advertises.
func GPUResource(manufacturer string) corev1.ResourceName {
	switch strings.ToLower(manufacturer) {
	case "amd":
		return awsv1.ResourceAMDGPU
	case "habana":
		return awsv1.ResourceHabanaGaudi
	}
	return awsv1.ResourceNVIDIAGPU
}

// CPUClockGHz is the SIMULATED sustained clock speed of the vendor's processors.
func CPUClockGHz(vendor string) float64 {
	switch vendor {
	case "intel":
		return 3.1
	case "amd":
		return 3.3
	}
	return 2.5
}

// kebab writes a device name as Karpenter's labels do ("Radeon Pro V520" is radeon-pro-v520).
func kebab(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "-")
}

// gravitonCMAMiB is what the contiguous memory allocator of Graviton kernels reserves. Karpenter's
// AWS provider, Tailor's and the emulator's kubelets all take it off arm64 types. Without it here,
// `tailor plan` and the fake cloud packed Graviton nodes up to 64 MiB fuller than the AWS cloud
// can: harness seed 2518 planned seven 2 GiB pods onto an r6g.large with 17 MiB to spare, which
// on the AWS cloud needs an r6g.xlarge, and the live fleet came out 1.44 x "the plan".
const gravitonCMAMiB = 64

// usableMemoryMiB is the memory a node of the shape reports: the nominal memory, less the
// Graviton kernels' reservation, less the hypervisor's share of what is left.
func usableMemoryMiB(s Shape) int64 {
	mem := s.MemoryMiB
	if s.Arch == "arm64" {
		mem -= gravitonCMAMiB
	}
	return mem - vmMemoryOverheadMiB(mem)
}

// vmMemoryOverheadMiB is what the hypervisor keeps of the nominal memory; Karpenter rounds it up.
func vmMemoryOverheadMiB(memMiB int64) int64 {
	return int64(float64(memMiB)*vmMemoryOverheadPercent + 0.999999)
}

// overhead is kube-reserved plus the hard eviction thresholds, with Karpenter's AWS defaults.
func overhead(vcpu, pods int64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedMilliCPU(vcpu), resource.DecimalSI),
		corev1.ResourceMemory:           mebibytes(11*pods + 255 + evictionMemoryMi),
		corev1.ResourceEphemeralStorage: gibibytes(kubeReservedEphemeralGi + ephemeralStorageGi*evictionEphemeralPct/100),
	}
}

// kubeReservedMilliCPU is the EKS formula: 6% of the first core, 1% of the second, 0.5% of the
// third and fourth, 0.25% of every core above four. In tenths of a millicore to stay exact.
func kubeReservedMilliCPU(vcpu int64) int64 {
	tenths := int64(0)
	for core := int64(1); core <= vcpu; core++ {
		switch {
		case core == 1:
			tenths += 600
		case core == 2:
			tenths += 100
		case core <= 4:
			tenths += 50
		default:
			tenths += 25
		}
	}
	return (tenths + 9) / 10
}

func mebibytes(n int64) resource.Quantity {
	return *resource.NewQuantity(n*1024*1024, resource.BinarySI)
}

func gibibytes(n int64) resource.Quantity {
	return *resource.NewQuantity(n*1024*1024*1024, resource.BinarySI)
}

// copyInstanceType is a deep copy, so that the provider's catalog cannot be changed through what
// it hands out.
func copyInstanceType(it *cloud.InstanceType) *cloud.InstanceType {
	out := &cloud.InstanceType{
		Name:      it.Name,
		Labels:    make(map[string]string, len(it.Labels)),
		Capacity:  it.Capacity.DeepCopy(),
		Overhead:  it.Overhead.DeepCopy(),
		Offerings: append([]cloud.Offering(nil), it.Offerings...),
	}
	for k, v := range it.Labels {
		out.Labels[k] = v
	}
	return out
}
