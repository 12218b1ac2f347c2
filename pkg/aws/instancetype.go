package aws

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
)

// familyPattern splits names the way Karpenter does (m5.large → m, 5; u-6tb1.metal → u, 1).
var familyPattern = regexp.MustCompile(`(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`)

// typeLabels are the node labels every instance of the type carries (zone and capacity type are
// per offering). Values come from DescribeInstanceTypes, lower-cased as Karpenter writes them.
func typeLabels(info ec2types.InstanceTypeInfo) map[string]string {
	name := string(info.InstanceType)
	l := map[string]string{
		corev1.LabelInstanceTypeStable: name,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         arch(info),
	}
	if m := familyPattern.FindStringSubmatch(name); m != nil {
		l[awsv1.LabelInstanceCategory] = m[1]
		l[awsv1.LabelInstanceGeneration] = m[3]
	}
	if family, size, ok := strings.Cut(name, "."); ok {
		l[awsv1.LabelInstanceFamily] = family
		l[awsv1.LabelInstanceSize] = size
	}
	set := func(key string, v int64) { l[key] = strconv.FormatInt(v, 10) }
	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		set(awsv1.LabelInstanceCPU, int64(*info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		set(awsv1.LabelInstanceMemory, *info.MemoryInfo.SizeInMiB)
	}
	if p := info.ProcessorInfo; p != nil {
		if p.Manufacturer != nil {
			l[awsv1.LabelInstanceCPUManufacturer] = kebab(*p.Manufacturer)
		}
		// As Karpenter: a type whose clock EC2 does not publish says 0, so Gt/Lt selectors
		// treat it as slow rather than match it by its absence.
		set(awsv1.LabelInstanceCPUSustainedClockSpeedMhz, int64(math.Round(deref(p.SustainedClockSpeedInGhz)*1000)))
	}
	// Bare metal has no hypervisor: EC2 says "", and Karpenter labels it so, which lets a
	// NodePool select metal with instance-hypervisor In [""].
	l[awsv1.LabelInstanceHypervisor] = string(info.Hypervisor)
	if n := info.NetworkInfo; n != nil && n.EncryptionInTransitSupported != nil {
		l[awsv1.LabelInstanceEncryptionInTransitSupported] = strconv.FormatBool(*n.EncryptionInTransitSupported)
	}
	if mbps, ok := networkBandwidth(info); ok {
		set(awsv1.LabelInstanceNetworkBandwidth, mbps)
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault && e.EbsOptimizedInfo != nil && e.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		set(awsv1.LabelInstanceEBSBandwidth, int64(*e.EbsOptimizedInfo.MaximumBandwidthInMbps))
	}
	// GPU labels only describe a single kind of GPU: a mixed box has no one name to select on.
	if g := info.GpuInfo; g != nil && len(g.Gpus) == 1 {
		gpu := g.Gpus[0]
		l[awsv1.LabelInstanceGPUName] = kebab(str(gpu.Name))
		l[awsv1.LabelInstanceGPUManufacturer] = kebab(str(gpu.Manufacturer))
		set(awsv1.LabelInstanceGPUCount, int64(deref(gpu.Count)))
		if gpu.MemoryInfo != nil && gpu.MemoryInfo.SizeInMiB != nil {
			set(awsv1.LabelInstanceGPUMemory, int64(*gpu.MemoryInfo.SizeInMiB))
		}
	}
	// Neuron devices (Inferentia, Trainium) are accelerators made by AWS, labelled like a GPU.
	if n := info.NeuronInfo; n != nil && len(n.NeuronDevices) == 1 {
		dev := n.NeuronDevices[0]
		l[awsv1.LabelInstanceAcceleratorName] = kebab(str(dev.Name))
		l[awsv1.LabelInstanceAcceleratorManufacturer] = "aws"
		set(awsv1.LabelInstanceAcceleratorCount, int64(deref(dev.Count)))
	}
	// Other inference accelerators (Qualcomm AI 100), when the type has no Neuron devices.
	if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) == 1 && info.NeuronInfo == nil {
		dev := a.Accelerators[0]
		l[awsv1.LabelInstanceAcceleratorName] = kebab(str(dev.Name))
		l[awsv1.LabelInstanceAcceleratorManufacturer] = kebab(str(dev.Manufacturer))
		set(awsv1.LabelInstanceAcceleratorCount, int64(deref(dev.Count)))
	}
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.NvmeSupport != "" && s.TotalSizeInGB != nil {
		set(awsv1.LabelInstanceLocalNVME, *s.TotalSizeInGB)
	}
	family, _, _ := strings.Cut(name, ".")
	l[awsv1.LabelInstanceCapabilityFlex] = strconv.FormatBool(strings.Contains(family, "-flex"))
	if strings.Contains(family, "-flex") {
		// The key before Karpenter v1.7 renamed it, kept with its old meaning
		// (docs/reference/ec2-catalog.md).
		l[awsv1.LabelInstanceCapacityFlex] = "true"
	}
	return l
}

// networkBandwidth is the instance's baseline bandwidth in Mbps: the sum over its network cards
// (p5.48xlarge has 32 of 100 Gbps), as DescribeInstanceTypes reports them, or, where it reports
// no card's bandwidth, the figure EC2 publishes for the type (the snapshot's table, as
// Karpenter's).
func networkBandwidth(info ec2types.InstanceTypeInfo) (int64, bool) {
	if n := info.NetworkInfo; n != nil {
		sum, reported := 0.0, false
		for _, c := range n.NetworkCards {
			if c.BaselineBandwidthInGbps != nil {
				sum, reported = sum+*c.BaselineBandwidthInGbps, true
			}
		}
		if reported {
			return int64(math.Round(sum * 1000)), true
		}
	}
	if t := ec2facts.Lookup(string(info.InstanceType)); t != nil && t.BandwidthMbps > 0 {
		return t.BandwidthMbps, true
	}
	return 0, false
}

func arch(info ec2types.InstanceTypeInfo) string {
	if info.ProcessorInfo != nil {
		for _, a := range info.ProcessorInfo.SupportedArchitectures {
			if a == ec2types.ArchitectureTypeArm64 {
				return karpv1.ArchitectureArm64
			}
		}
	}
	return karpv1.ArchitectureAmd64
}

func defaultCard(n *ec2types.NetworkInfo) *ec2types.NetworkCardInfo {
	idx := deref(n.DefaultNetworkCardIndex)
	for i := range n.NetworkCards {
		if deref(n.NetworkCards[i].NetworkCardIndex) == idx {
			return &n.NetworkCards[i]
		}
	}
	return nil
}

// kebab lower-cases and hyphenates a GPU name ("A10G" → "a10g", "Radeon Pro V520" → "radeon-pro-v520").
func kebab(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "-")
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
