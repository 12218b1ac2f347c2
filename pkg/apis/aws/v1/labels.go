package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Node labels describing an EC2 instance type, as the AWS provider of Karpenter sets them. Both the
// fake cloud and the AWS provider put them on instance types, so NodePools and pods written for
// Karpenter on AWS (e.g. instance-category In [c, m, r]) work against either.
const (
	LabelInstanceCategory                     = Group + "/instance-category"   // "m" in m5.large
	LabelInstanceFamily                       = Group + "/instance-family"     // "m5"
	LabelInstanceGeneration                   = Group + "/instance-generation" // "5"
	LabelInstanceSize                         = Group + "/instance-size"       // "large"
	LabelInstanceCPU                          = Group + "/instance-cpu"        // vCPUs
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory" // MiB
	LabelInstanceEBSBandwidth                 = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth             = Group + "/instance-network-bandwidth" // baseline Mbps
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory" // MiB
	LabelInstanceAcceleratorName              = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = Group + "/instance-accelerator-count"
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor" // nitro, xen, "" for metal
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceLocalNVME                    = Group + "/instance-local-nvme" // GB
	// LabelInstanceCapabilityFlex is "true" on flex types (m7i-flex) and "false" on every
	// other, as Karpenter v1.7+ names and sets it.
	LabelInstanceCapabilityFlex = Group + "/instance-capability-flex"
	// LabelInstanceCapacityFlex is the key Tailor used before Karpenter's v1.7 name. Deprecated:
	// still accepted and still set ("true" on flex types only, as before) so NodePools that use
	// it keep matching; Tailor logs a warning for each NodePool that does.
	LabelInstanceCapacityFlex    = Group + "/instance-capacity-flex"
	LabelCapacityReservationID   = Group + "/capacity-reservation-id"
	LabelCapacityReservationType = Group + "/capacity-reservation-type"
	// LabelTopologyZoneID is the zone ID (use1-az1), the same physical zone in every account.
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"
	// LabelNodeClass names the EC2NodeClass a node was launched from. It is set by Tailor, not
	// well-known: NodePools may not constrain it.
	LabelNodeClass = Group + "/ec2nodeclass"
)

// WellKnownLabels are the AWS labels NodePools and pods may constrain. The NodePool and NodeClaim
// CRDs allow exactly the karpenter.k8s.aws ones among these (a test keeps the two in step).
var WellKnownLabels = sets.New(
	LabelInstanceCategory,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceSize,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceCPUSustainedClockSpeedMhz,
	LabelInstanceMemory,
	LabelInstanceEBSBandwidth,
	LabelInstanceNetworkBandwidth,
	LabelInstanceGPUName,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUCount,
	LabelInstanceGPUMemory,
	LabelInstanceAcceleratorName,
	LabelInstanceAcceleratorManufacturer,
	LabelInstanceAcceleratorCount,
	LabelInstanceHypervisor,
	LabelInstanceEncryptionInTransitSupported,
	LabelInstanceLocalNVME,
	LabelInstanceCapabilityFlex,
	LabelInstanceCapacityFlex,
	LabelCapacityReservationID,
	LabelCapacityReservationType,
	LabelTopologyZoneID,
)

// Annotations the AWS provider puts on EC2NodeClasses and NodeClaims.
const (
	// AnnotationEC2NodeClassHash is the hash of the node class spec a NodeClaim was launched with;
	// a different current hash means the claim drifted.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion versions how the hash is computed.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// AnnotationInstanceTagged marks a NodeClaim whose instance got its post-registration tags.
	AnnotationInstanceTagged = Group + "/tagged"
)

// EC2 tag keys Tailor sets on what it launches; users may not set them (see EC2NodeClassSpec.Tags).
const (
	TagKeyNodePool       = "karpenter.sh/nodepool"
	TagKeyNodeClaim      = "karpenter.sh/nodeclaim"
	TagKeyNodeClass      = LabelNodeClass
	TagKeyEKSClusterName = "eks:eks-cluster-name"
	TagKeyName           = "Name"
)

// AMI families (values of spec.amiFamily).
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"
)

// Extended resources that EC2 instance types advertise.
const (
	ResourceNVIDIAGPU          corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU             corev1.ResourceName = "amd.com/gpu"
	ResourceAWSNeuron          corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore      corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceHabanaGaudi        corev1.ResourceName = "habana.ai/gaudi"
	ResourceAWSPodENI          corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	ResourceEFA                corev1.ResourceName = "vpc.amazonaws.com/efa"
	ResourcePrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"
)

// Windows Server builds: the node.kubernetes.io/windows-build label of each Windows family's
// nodes, which Windows containers must match (a container image runs only on its own build).
const (
	Windows2019Build = "10.0.17763"
	Windows2022Build = "10.0.20348"
	Windows2025Build = "10.0.26100"
)

// WindowsBuild is the Windows Server build of an AMI family, or "" when the family is not Windows.
func WindowsBuild(family string) string {
	switch family {
	case AMIFamilyWindows2019:
		return Windows2019Build
	case AMIFamilyWindows2022:
		return Windows2022Build
	case AMIFamilyWindows2025:
		return Windows2025Build
	}
	return ""
}
