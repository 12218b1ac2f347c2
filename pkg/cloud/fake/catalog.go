// Package fake is an in-memory, SIMULATED EC2-like cloud for tests and the sandbox.
//
// Nothing in it is real AWS data. The catalog is generated from a handful of rules that give it the
// shape of EC2 (families, generations, sizes, architectures, ENI-limited pods, Karpenter's overhead
// formulas) so that planning and consolidation face realistic choices, and the prices are made up
// in the same spirit. Do not use any number here to reason about a real bill.
package fake

import (
	"regexp"
	"sort"
	"strconv"

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

type size struct {
	name string
	vcpu int64
	// enis and ipsPerENI give max pods the way the VPC CNI does: enis*(ipsPerENI-1)+2.
	enis, ipsPerENI int64
	// Baseline network bandwidth in Mbps for generation <=5 and >=6 (newer NICs are faster).
	bwOld, bwNew int64
}

var sizes = []size{
	{"large", 2, 3, 10, 750, 781},
	{"xlarge", 4, 4, 15, 1250, 1562},
	{"2xlarge", 8, 4, 15, 2500, 3125},
	{"4xlarge", 16, 8, 30, 5000, 6250},
	{"8xlarge", 32, 8, 30, 10000, 12500},
	{"12xlarge", 48, 8, 30, 12000, 18750},
	{"16xlarge", 64, 15, 50, 20000, 25000},
	{"24xlarge", 96, 15, 50, 25000, 37500},
}

type family struct {
	name      string
	arch      string
	cpuVendor string
	gibPerCPU int64
	// sizes limits the family to these size names; nil means every size.
	sizes []string
	// gpus per size name; only GPU families set it.
	gpus map[string]int64
}

const (
	a10gName      = "a10g"
	a10gVendor    = "nvidia"
	a10gMemoryMiB = 24 * 1024
)

var families = []family{
	{name: "c5", arch: "amd64", cpuVendor: "intel", gibPerCPU: 2},
	{name: "c6i", arch: "amd64", cpuVendor: "intel", gibPerCPU: 2},
	{name: "c6g", arch: "arm64", cpuVendor: "aws", gibPerCPU: 2},
	{name: "c7i", arch: "amd64", cpuVendor: "intel", gibPerCPU: 2},
	{name: "c7g", arch: "arm64", cpuVendor: "aws", gibPerCPU: 2},
	{name: "m5", arch: "amd64", cpuVendor: "intel", gibPerCPU: 4},
	{name: "m6i", arch: "amd64", cpuVendor: "intel", gibPerCPU: 4},
	{name: "m6g", arch: "arm64", cpuVendor: "aws", gibPerCPU: 4},
	{name: "m7i", arch: "amd64", cpuVendor: "intel", gibPerCPU: 4},
	{name: "m7g", arch: "arm64", cpuVendor: "aws", gibPerCPU: 4},
	{name: "r5", arch: "amd64", cpuVendor: "intel", gibPerCPU: 8},
	{name: "r6i", arch: "amd64", cpuVendor: "intel", gibPerCPU: 8},
	{name: "r6g", arch: "arm64", cpuVendor: "aws", gibPerCPU: 8},
	{name: "r7i", arch: "amd64", cpuVendor: "intel", gibPerCPU: 8},
	{name: "r7g", arch: "arm64", cpuVendor: "aws", gibPerCPU: 8},
	{name: "t3", arch: "amd64", cpuVendor: "intel", gibPerCPU: 4, sizes: []string{"large", "xlarge", "2xlarge"}},
	{name: "t4g", arch: "arm64", cpuVendor: "aws", gibPerCPU: 4, sizes: []string{"large", "xlarge", "2xlarge"}},
	{name: "g5", arch: "amd64", cpuVendor: "amd", gibPerCPU: 4,
		sizes: []string{"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge"},
		gpus:  map[string]int64{"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "12xlarge": 4, "16xlarge": 1, "24xlarge": 4}},
}

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
	var out []*cloud.InstanceType
	for _, f := range families {
		for _, s := range sizes {
			if f.sizes != nil && !contains(f.sizes, s.name) {
				continue
			}
			out = append(out, newInstanceType(f, s, zones))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func newInstanceType(f family, s size, zones []string) *cloud.InstanceType {
	name := f.name + "." + s.name
	m := familyPattern.FindStringSubmatch(name)
	category, generation := m[1], m[3]
	memMiB := s.vcpu * f.gibPerCPU * 1024
	pods := s.enis*(s.ipsPerENI-1) + 2
	bw := s.bwNew
	if gen, _ := strconv.Atoi(generation); gen <= 5 {
		bw = s.bwOld
	}
	labels := map[string]string{
		corev1.LabelInstanceTypeStable:      name,
		corev1.LabelArchStable:              f.arch,
		corev1.LabelOSStable:                "linux",
		awsv1.LabelInstanceCategory:         category,
		awsv1.LabelInstanceFamily:           f.name,
		awsv1.LabelInstanceGeneration:       generation,
		awsv1.LabelInstanceSize:             s.name,
		awsv1.LabelInstanceCPU:              strconv.FormatInt(s.vcpu, 10),
		awsv1.LabelInstanceCPUManufacturer:  f.cpuVendor,
		awsv1.LabelInstanceMemory:           strconv.FormatInt(memMiB, 10),
		awsv1.LabelInstanceNetworkBandwidth: strconv.FormatInt(bw, 10),
		awsv1.LabelInstanceHypervisor:       "nitro",
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(s.vcpu, resource.DecimalSI),
		corev1.ResourceMemory:           mebibytes(memMiB - vmMemoryOverheadMiB(memMiB)),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: gibibytes(ephemeralStorageGi),
	}
	var gpus int64
	if n := f.gpus[s.name]; n > 0 {
		gpus = n
		labels[awsv1.LabelInstanceGPUCount] = strconv.FormatInt(n, 10)
		labels[awsv1.LabelInstanceGPUName] = a10gName
		labels[awsv1.LabelInstanceGPUManufacturer] = a10gVendor
		labels[awsv1.LabelInstanceGPUMemory] = strconv.Itoa(a10gMemoryMiB)
		capacity[ResourceNvidiaGPU] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return &cloud.InstanceType{
		Name:      name,
		Labels:    labels,
		Capacity:  capacity,
		Overhead:  overhead(s.vcpu, pods),
		Offerings: offerings(name, category, generation, f.arch, s.vcpu, gpus, zones),
	}
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
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
