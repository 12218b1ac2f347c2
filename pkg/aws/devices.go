package aws

import (
	"fmt"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

// The DRA drivers whose devices Tailor knows per instance type without being told. NVIDIA's names
// and attributes are those of its DRA driver for GPUs (NVIDIA/k8s-dra-driver-gpu); the Neuron and
// EFA names are Tailor's, for drivers whose published names a user states with their own device
// templates where they differ (docs/concepts/devices.md).
const (
	DriverNVIDIAGPU = "gpu.nvidia.com"
	DriverNeuron    = "neuron.aws.com"
	DriverEFA       = "efa.aws.com"
)

// nvidiaGPU is what EC2 does not say about an NVIDIA GPU and its DRA driver publishes: the
// product name nvidia-smi reports, the architecture and the CUDA compute capability.
type nvidiaGPU struct{ product, architecture, computeCapability string }

// nvidiaGPUs is keyed by EC2's GPU name, lower-cased as the catalog's labels carry it.
var nvidiaGPUs = map[string]nvidiaGPU{
	"a100":                {"NVIDIA A100-SXM4", "Ampere", "8.0.0"},
	"a10g":                {"NVIDIA A10G", "Ampere", "8.6.0"},
	"b200":                {"NVIDIA B200", "Blackwell", "10.0.0"},
	"b300":                {"NVIDIA B300", "Blackwell", "10.3.0"},
	"h100":                {"NVIDIA H100 80GB HBM3", "Hopper", "9.0.0"},
	"h200":                {"NVIDIA H200", "Hopper", "9.0.0"},
	"l4":                  {"NVIDIA L4", "Ada Lovelace", "8.9.0"},
	"l40s":                {"NVIDIA L40S", "Ada Lovelace", "8.9.0"},
	"rtx-pro-4500":        {"NVIDIA RTX PRO 4500 Blackwell", "Blackwell", "12.0.0"},
	"rtx-pro-server-6000": {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "Blackwell", "12.0.0"},
	"t4":                  {"Tesla T4", "Turing", "7.5.0"},
	"t4g":                 {"NVIDIA T4G", "Turing", "7.5.0"},
	"v100":                {"Tesla V100-SXM2", "Volta", "7.0.0"},
}

// builtInDevices are the devices the type's drivers publish, from what DescribeInstanceTypes says
// of its GPUs, Neuron devices and EFA interfaces.
func builtInDevices(info ec2types.InstanceTypeInfo) []cloud.DeviceSet {
	var out []cloud.DeviceSet
	if set, ok := gpuDevices(info.GpuInfo); ok {
		out = append(out, set)
	}
	if set, ok := neuronDevices(info.NeuronInfo); ok {
		out = append(out, set)
	}
	if n := info.NetworkInfo; n != nil && n.EfaInfo != nil && deref(n.EfaInfo.MaximumEfaInterfaces) > 0 {
		set := cloud.DeviceSet{Driver: DriverEFA}
		for i := range deref(n.EfaInfo.MaximumEfaInterfaces) {
			set.Devices = append(set.Devices, resourcev1.Device{
				Name:       fmt.Sprintf("efa-%d", i),
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: ptr.To("efa")}, "index": {IntValue: ptr.To(int64(i))}},
			})
		}
		out = append(out, set)
	}
	return out
}

// gpuDevices are the GPUs of an NVIDIA type, one device each. Types with fractions of a GPU
// (count 0) and other makers' GPUs publish none: no driver Tailor knows serves them.
func gpuDevices(g *ec2types.GpuInfo) (cloud.DeviceSet, bool) {
	if g == nil || len(g.Gpus) != 1 || !strings.EqualFold(str(g.Gpus[0].Manufacturer), "nvidia") || deref(g.Gpus[0].Count) <= 0 {
		return cloud.DeviceSet{}, false
	}
	gpu := g.Gpus[0]
	name := kebab(str(gpu.Name))
	known, ok := nvidiaGPUs[name]
	if !ok {
		known = nvidiaGPU{product: "NVIDIA " + strings.ToUpper(name)}
	}
	var memory resource.Quantity
	if gpu.MemoryInfo != nil && gpu.MemoryInfo.SizeInMiB != nil {
		memory = *resource.NewQuantity(int64(*gpu.MemoryInfo.SizeInMiB)<<20, resource.BinarySI)
	}
	set := cloud.DeviceSet{Driver: DriverNVIDIAGPU}
	for i := range deref(gpu.Count) {
		attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"type":        {StringValue: ptr.To("gpu")},
			"index":       {IntValue: ptr.To(int64(i))},
			"minor":       {IntValue: ptr.To(int64(i))},
			"brand":       {StringValue: ptr.To("Nvidia")},
			"productName": {StringValue: ptr.To(known.product)},
		}
		if known.architecture != "" {
			attrs["architecture"] = resourcev1.DeviceAttribute{StringValue: ptr.To(known.architecture)}
			attrs["cudaComputeCapability"] = resourcev1.DeviceAttribute{VersionValue: ptr.To(known.computeCapability)}
		}
		set.Devices = append(set.Devices, resourcev1.Device{
			Name:       fmt.Sprintf("gpu-%d", i),
			Attributes: attrs,
			Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: memory}},
		})
	}
	return set, true
}

// neuronDevices are a type's Inferentia or Trainium devices, one device each, with its cores as a
// capacity.
func neuronDevices(n *ec2types.NeuronInfo) (cloud.DeviceSet, bool) {
	if n == nil || len(n.NeuronDevices) != 1 || deref(n.NeuronDevices[0].Count) <= 0 {
		return cloud.DeviceSet{}, false
	}
	dev := n.NeuronDevices[0]
	cores := int32(0)
	if dev.CoreInfo != nil {
		cores = deref(dev.CoreInfo.Count)
	}
	set := cloud.DeviceSet{Driver: DriverNeuron}
	for i := range deref(dev.Count) {
		set.Devices = append(set.Devices, resourcev1.Device{
			Name: fmt.Sprintf("neuron-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type":  {StringValue: ptr.To(kebab(str(dev.Name)))},
				"index": {IntValue: ptr.To(int64(i))},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"cores": {Value: *resource.NewQuantity(int64(cores), resource.DecimalSI)}},
		})
	}
	return set, true
}
