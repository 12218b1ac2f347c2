package aws

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
)

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
		// Only makers whose device plugin advertises a resource, as Karpenter counts them.
		for _, gpu := range g.Gpus {
			if name, ok := gpuResources[strings.ToLower(str(gpu.Manufacturer))]; ok {
				add(out, name, int64(deref(gpu.Count)))
			}
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
	// Branch ENIs for security groups for pods, which the VPC resource controller advertises on
	// trunking types. EC2's API does not publish the count; the snapshot's ENI limits do, as
	// Karpenter's table (a type unknown to it gets none).
	if t := ec2facts.Lookup(string(info.InstanceType)); t != nil && t.Trunking {
		add(out, awsv1.ResourceAWSPodENI, int64(t.BranchENIs))
	}
	// One EFA device per EFA interface the type can take, as the EFA device plugin counts them.
	if n := info.NetworkInfo; n != nil && n.EfaInfo != nil && deref(n.EfaInfo.MaximumEfaInterfaces) > 0 {
		add(out, awsv1.ResourceEFA, int64(*n.EfaInfo.MaximumEfaInterfaces))
	}
	return out
}

var gpuResources = map[string]corev1.ResourceName{"nvidia": awsv1.ResourceNVIDIAGPU, "amd": awsv1.ResourceAMDGPU,
	"habana": awsv1.ResourceHabanaGaudi}

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
	// computes it that way, whatever maxPods says, and over every ENI of the default card:
	// Karpenter leaves reserved ENIs out of max-pods but not out of this reservation.
	reservedPods := r.pods
	if family == awsv1.AMIFamilyAL2 || family == awsv1.AMIFamilyAL2023 || family == awsv1.AMIFamilyCustom {
		reservedPods = eniLimitedPods(info, 0)
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
