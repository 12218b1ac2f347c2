package aws

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
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
			l[awsv1.LabelInstanceCPUManufacturer] = strings.ToLower(*p.Manufacturer)
		}
		if p.SustainedClockSpeedInGhz != nil {
			set(awsv1.LabelInstanceCPUSustainedClockSpeedMhz, int64(math.Round(*p.SustainedClockSpeedInGhz*1000)))
		}
	}
	if info.Hypervisor != "" {
		l[awsv1.LabelInstanceHypervisor] = string(info.Hypervisor)
	}
	if n := info.NetworkInfo; n != nil {
		if n.EncryptionInTransitSupported != nil {
			l[awsv1.LabelInstanceEncryptionInTransitSupported] = strconv.FormatBool(*n.EncryptionInTransitSupported)
		}
		if card := defaultCard(n); card != nil && card.BaselineBandwidthInGbps != nil {
			set(awsv1.LabelInstanceNetworkBandwidth, int64(math.Round(*card.BaselineBandwidthInGbps*1000)))
		}
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
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.NvmeSupport != "" && s.TotalSizeInGB != nil {
		set(awsv1.LabelInstanceLocalNVME, *s.TotalSizeInGB)
	}
	if strings.Contains(name, "-flex") {
		l[awsv1.LabelInstanceCapacityFlex] = "true"
	}
	return l
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

// kubeletConfig is what of the node class's kubelet settings changes allocatable.
type kubeletConfig struct {
	maxPods, podsPerCore *int32
	kubeReserved         map[string]string
	systemReserved       map[string]string
	evictionHard         map[string]string
}

func kubeletOf(nc *awsv1.EC2NodeClass) kubeletConfig {
	k := nc.Spec.Kubelet
	if k == nil {
		return kubeletConfig{}
	}
	return kubeletConfig{maxPods: k.MaxPods, podsPerCore: k.PodsPerCore, kubeReserved: k.KubeReserved,
		systemReserved: k.SystemReserved, evictionHard: k.EvictionHard}
}

// eniLimitedPods is what the VPC CNI can address: ENIs × (IPv4 per ENI − 1) + 2.
func eniLimitedPods(info ec2types.InstanceTypeInfo, reservedENIs int) int64 {
	if info.NetworkInfo == nil {
		return 110
	}
	enis := int64(deref(info.NetworkInfo.MaximumNetworkInterfaces)) - int64(reservedENIs)
	if card := defaultCard(info.NetworkInfo); card != nil && card.MaximumNetworkInterfaces != nil {
		enis = int64(*card.MaximumNetworkInterfaces) - int64(reservedENIs)
	}
	ips := int64(deref(info.NetworkInfo.Ipv4AddressesPerInterface))
	if enis <= 0 || ips <= 1 {
		return 0
	}
	return enis*(ips-1) + 2
}

// maxPods is the kubelet's max-pods: the node class's maxPods, else the ENI limit, capped by
// podsPerCore where the family's bootstrap honours it (not Bottlerocket).
func maxPods(info ec2types.InstanceTypeInfo, family string, k kubeletConfig, reservedENIs int) int64 {
	pods := eniLimitedPods(info, reservedENIs)
	if awsv1.WindowsBuild(family) != "" {
		// The VPC CNI on Windows gives pods secondary IPs of the primary ENI only; the kubelet's
		// own default of 110 is the limit, the IPs are an extended resource (see capacity).
		pods = 110
	}
	if k.maxPods != nil {
		pods = int64(*k.maxPods)
	}
	if k.podsPerCore != nil && *k.podsPerCore > 0 && family != awsv1.AMIFamilyBottlerocket {
		pods = min(pods, int64(*k.podsPerCore)*int64(deref(info.VCpuInfo.DefaultVCpus)))
	}
	return pods
}

// capacity is what the node will report: vCPUs, memory less the hypervisor's share (and the
// CMA reservation on arm64), pods, the kubelet's disk, and the devices the device plugins
// register (GPUs, Neuron devices and cores, EFA).
func capacity(info ec2types.InstanceTypeInfo, pods int64, ephemeral resource.Quantity, vmOverhead float64) corev1.ResourceList {
	mem := deref(info.MemoryInfo.SizeInMiB)
	if arch(info) == karpv1.ArchitectureArm64 {
		mem -= 64
	}
	mem -= int64(math.Ceil(float64(mem) * vmOverhead))
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(deref(info.VCpuInfo.DefaultVCpus)), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem*mi, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: ephemeral,
	}
	if g := info.GpuInfo; g != nil {
		for _, gpu := range g.Gpus {
			name := awsv1.ResourceNVIDIAGPU
			switch strings.ToLower(str(gpu.Manufacturer)) {
			case "amd":
				name = awsv1.ResourceAMDGPU
			case "habana":
				name = awsv1.ResourceHabanaGaudi
			}
			add(out, name, int64(deref(gpu.Count)))
		}
	}
	if n := info.NeuronInfo; n != nil {
		for _, dev := range n.NeuronDevices {
			add(out, awsv1.ResourceAWSNeuron, int64(deref(dev.Count)))
			if dev.CoreInfo != nil {
				add(out, awsv1.ResourceAWSNeuronCore, int64(deref(dev.Count))*int64(deref(dev.CoreInfo.Count)))
			}
		}
	}
	// One EFA device per EFA interface the type can take, as the EFA device plugin counts them.
	if n := info.NetworkInfo; n != nil && n.EfaInfo != nil && deref(n.EfaInfo.MaximumEfaInterfaces) > 0 {
		add(out, awsv1.ResourceEFA, int64(*n.EfaInfo.MaximumEfaInterfaces))
	}
	return out
}

// add adds n of an extended resource to the list.
func add(list corev1.ResourceList, name corev1.ResourceName, n int64) {
	if n <= 0 {
		return
	}
	q := list[name]
	q.Add(*resource.NewQuantity(n, resource.DecimalSI))
	list[name] = q
}

const mi = 1024 * 1024

// kubeReservedCPU is the EKS formula: 6% of the first core, 1% of the second, 0.5% of the third
// and fourth, 0.25% of every core above four.
func kubeReservedCPU(vcpu int64) resource.Quantity {
	milli := 0.0
	for core := int64(1); core <= vcpu; core++ {
		switch {
		case core == 1:
			milli += 60
		case core == 2:
			milli += 10
		case core <= 4:
			milli += 5
		default:
			milli += 2.5
		}
	}
	return *resource.NewMilliQuantity(int64(math.Ceil(milli)), resource.DecimalSI)
}

// nodeResources is what a node of a type will have and hold back, and what its kubelet is told.
type nodeResources struct {
	pods                   int64
	capacity, overhead     corev1.ResourceList
	kube, system, eviction map[string]string
}

// typeResources computes capacity and overhead as Karpenter does for the AMI family and kubelet
// settings.
func typeResources(info ec2types.InstanceTypeInfo, family string, k kubeletConfig, reservedENIs int, ephemeral resource.Quantity, vmOverhead float64) (nodeResources, error) {
	r := nodeResources{pods: maxPods(info, family, k, reservedENIs)}
	r.capacity = capacity(info, r.pods, ephemeral, vmOverhead)
	if awsv1.WindowsBuild(family) != "" && info.NetworkInfo != nil {
		// Windows pods each need one of the primary ENI's secondary IPv4 addresses, which the VPC
		// resource controller advertises as an extended resource and its webhook asks for.
		if ips := int64(deref(info.NetworkInfo.Ipv4AddressesPerInterface)) - 1; ips > 0 {
			r.capacity[awsv1.ResourcePrivateIPv4Address] = *resource.NewQuantity(ips, resource.DecimalSI)
		}
	}
	// kube-reserved memory follows the ENI-limited pod count where the family's bootstrap
	// computes it that way, whatever maxPods says.
	reservedPods := r.pods
	if family == awsv1.AMIFamilyAL2 || family == awsv1.AMIFamilyAL2023 || family == awsv1.AMIFamilyCustom {
		reservedPods = eniLimitedPods(info, reservedENIs)
	}
	var err error
	r.kube, r.system, r.eviction, r.overhead, err = reservations(r.capacity, reservedPods, k)
	return r, err
}

// reservations returns kube-reserved, system-reserved and the hard eviction thresholds, each as
// the kubelet will be told (user settings win key by key), and their sum as overhead.
func reservations(capacity corev1.ResourceList, reservedPods int64, k kubeletConfig) (kube, system, eviction map[string]string, overhead corev1.ResourceList, err error) {
	kube = map[string]string{
		"cpu":               cpuString(kubeReservedCPU(capacity.Cpu().Value())),
		"memory":            fmt.Sprintf("%dMi", 11*reservedPods+255),
		"ephemeral-storage": "1Gi",
	}
	for key, v := range k.kubeReserved {
		kube[key] = v
	}
	system = map[string]string{}
	for key, v := range k.systemReserved {
		system[key] = v
	}
	eviction = map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}
	for key, v := range k.evictionHard {
		eviction[key] = v
	}
	overhead = corev1.ResourceList{}
	add := func(name corev1.ResourceName, q resource.Quantity) {
		sum := overhead[name]
		sum.Add(q)
		overhead[name] = sum
	}
	for field, m := range map[string]map[string]string{"kubeReserved": kube, "systemReserved": system} {
		for key, v := range m {
			if key == "pid" {
				continue
			}
			q, perr := resource.ParseQuantity(v)
			if perr != nil {
				return nil, nil, nil, nil, fmt.Errorf("kubelet.%s[%s]=%q is not a quantity: %w", field, key, v, perr)
			}
			add(corev1.ResourceName(key), q)
		}
	}
	for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
		q, perr := evictionThreshold(eviction[signal], capacity[name])
		if perr != nil {
			return nil, nil, nil, nil, fmt.Errorf("kubelet.evictionHard[%s]: %w", signal, perr)
		}
		add(name, q)
	}
	return kube, system, eviction, overhead, nil
}

func cpuString(q resource.Quantity) string { return q.String() }

// evictionThreshold reads an absolute threshold or a percentage of capacity.
func evictionThreshold(v string, capacity resource.Quantity) (resource.Quantity, error) {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p < 0 || p > 100 {
			return resource.Quantity{}, fmt.Errorf("%q is not a percentage", v)
		}
		return *resource.NewQuantity(int64(math.Ceil(float64(capacity.Value())*p/100)), resource.BinarySI), nil
	}
	return resource.ParseQuantity(v)
}
