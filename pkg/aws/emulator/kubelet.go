package emulator

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/aws/userdata"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// Launch is what an instance knows about itself once it boots: its identity from the instance
// metadata, and how to register from its user data (read the way nodeadm, Bottlerocket or
// bootstrap.sh would). It is all the sandbox needs to register the Node a kubelet would.
type Launch struct {
	Instance Instance
	// NodeName is the instance's private DNS name, which is what EKS kubelets register as.
	NodeName string
	// Bootstrap is the registration config from the user data; BootstrapErr says why it could
	// not be read, in which case a real node would never join.
	Bootstrap    userdata.Node
	BootstrapErr error
	// Capacity and Allocatable are what the kubelet reports, computed from the instance type and
	// the kubelet settings in the user data.
	Capacity, Allocatable corev1.ResourceList
	Architecture          string
	// OS is the image's operating system, "linux" or "windows", and WindowsBuild its Windows
	// Server build, which the kubelet labels the node with.
	OS, WindowsBuild string
	// Region is the emulated region, which the cloud controller labels the node with.
	Region string
}

// ProviderID is aws:///<zone>/<instance-id>.
func (l Launch) ProviderID() string { return l.Instance.ProviderID() }

// vmMemoryOverheadPercent is the share of nominal memory the SIMULATED hypervisor keeps: the same
// 7.5% Karpenter estimates, so node capacity matches what the provider promised.
const vmMemoryOverheadPercent = 0.075

// bootsLocked prepares the Launch of each new instance. Callers hold e.mu.
func (e *Emulator) bootsLocked(instances []*Instance) []Launch {
	if e.opts.OnLaunch == nil {
		return nil
	}
	out := make([]Launch, 0, len(instances))
	for _, inst := range instances {
		lt := e.launchTemplateByName(inst.LaunchTemplate)
		it := e.instanceType(inst.InstanceType)
		l := Launch{Instance: inst.copy(), NodeName: inst.PrivateDNSName, Region: e.region}
		l.Bootstrap, l.BootstrapErr = userdata.Parse(lt.UserData)
		l.Architecture = "amd64"
		if it.ProcessorInfo.SupportedArchitectures[0] == "arm64" {
			l.Architecture = "arm64"
		}
		l.OS, l.WindowsBuild = e.imageOSLocked(lt.ImageID)
		l.Capacity = kubeletCapacity(it, lt, e.kubeletDeviceLocked(lt.ImageID), l.Bootstrap, l.Architecture)
		if l.OS == "windows" {
			addWindowsIPs(l.Capacity, it)
		}
		l.Allocatable = kubeletAllocatable(l.Capacity, l.Bootstrap)
		out = append(out, l)
	}
	return out
}

// boot waits out the boot time and hands the launch to the hook, unless the instance was
// terminated meanwhile.
func (e *Emulator) boot(l Launch) {
	if e.opts.BootDelay > 0 {
		<-e.clock.After(e.opts.BootDelay)
	}
	e.mu.Lock()
	running := false
	for _, i := range e.world.instances {
		if i.ID == l.Instance.ID && i.State == "running" {
			running = true
		}
	}
	e.mu.Unlock()
	if !running {
		return
	}
	if l.BootstrapErr != nil {
		klog.Background().Error(l.BootstrapErr, "emulated instance cannot join the cluster", "instance", l.Instance.ID)
	}
	e.opts.OnLaunch(l)
}

// kubeletDeviceLocked is the device whose filesystem holds /var/lib/kubelet, which is what the
// kubelet reports as ephemeral storage: the root volume of the EKS images, Bottlerocket's data
// volume. Data volumes mapped beside it do not count. Callers hold e.mu.
func (e *Emulator) kubeletDeviceLocked(imageID string) string {
	for _, img := range e.world.images {
		if img.ID == imageID && strings.HasPrefix(img.Name, "bottlerocket") {
			return "/dev/xvdb"
		}
		if img.ID == imageID && windowsBuildOf(img.Name) != "" {
			return windowsRootDevice
		}
	}
	return "/dev/xvda"
}

func kubeletCapacity(it *instanceTypeInfo, lt *LaunchTemplate, kubeletDevice string, boot userdata.Node, arch string) corev1.ResourceList {
	mem := it.MemoryInfo.SizeInMiB
	if arch == "arm64" {
		mem -= 64 // the contiguous memory allocator's reservation on Graviton kernels
	}
	mem -= int64(math.Ceil(float64(mem) * vmMemoryOverheadPercent))
	pods := int64(boot.MaxPods)
	if pods == 0 {
		pods = 110
	}
	diskGiB := int64(20) // the EKS images' own root volume, when the template maps none
	if kubeletDevice == windowsRootDevice {
		diskGiB = windowsRootGiB
	}
	for _, v := range lt.Volumes {
		if v.Device == kubeletDevice && v.SizeGiB > 0 {
			diskGiB = v.SizeGiB
		}
	}
	disk := *resource.NewQuantity(diskGiB*1024*1024*1024, resource.BinarySI)
	// The bootstrap's RAID0 array of the instance store holds /var/lib/kubelet instead.
	if store := it.InstanceStorageInfo; boot.InstanceStoreRAID0 && store != nil {
		disk = *resource.NewQuantity(store.TotalSizeInGB*1000*1000*1000, resource.DecimalSI)
	}
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(it.VCPUInfo.DefaultVCPUs, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem*1024*1024, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: disk,
	}
	// What the device plugins (NVIDIA, AMD, Neuron) register once the node is up.
	if g := it.GPUInfo; g != nil {
		for _, d := range g.GPUs {
			if d.Count > 0 {
				out[fake.GPUResource(d.Manufacturer)] = *resource.NewQuantity(d.Count, resource.DecimalSI)
			}
		}
	}
	if n := it.NeuronInfo; n != nil {
		for _, d := range n.NeuronDevices {
			if d.Count > 0 {
				out[awsv1.ResourceAWSNeuron] = *resource.NewQuantity(d.Count, resource.DecimalSI)
				out[awsv1.ResourceAWSNeuronCore] = *resource.NewQuantity(d.Count*d.CoreInfo.Count, resource.DecimalSI)
			}
		}
	}
	// The VPC resource controller advertises the branch ENIs of trunking types, for security
	// groups for pods.
	if t := ec2facts.Lookup(it.InstanceType); t != nil && t.Trunking && t.BranchENIs > 0 {
		out[awsv1.ResourceAWSPodENI] = *resource.NewQuantity(int64(t.BranchENIs), resource.DecimalSI)
	}
	// The EFA device plugin finds one device per EFA interface the instance was launched with.
	if n := efaInterfaces(lt); n > 0 {
		out[awsv1.ResourceEFA] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return out
}

// kubeletAllocatable is the kubelet's own rule: capacity minus kube-reserved, system-reserved and
// the hard eviction thresholds.
func kubeletAllocatable(capacity corev1.ResourceList, boot userdata.Node) corev1.ResourceList {
	out := capacity.DeepCopy()
	sub := func(name corev1.ResourceName, q resource.Quantity) {
		if have, ok := out[name]; ok {
			have.Sub(q)
			if have.Sign() < 0 {
				have = resource.Quantity{}
			}
			out[name] = have
		}
	}
	for _, reserved := range []map[string]string{boot.KubeReserved, boot.SystemReserved} {
		for name, v := range reserved {
			if q, err := resource.ParseQuantity(v); err == nil {
				sub(corev1.ResourceName(name), q)
			}
		}
	}
	for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
		if v, ok := boot.EvictionHard[signal]; ok {
			sub(name, threshold(v, capacity[name]))
		}
	}
	return out
}

// threshold reads an eviction threshold: a quantity, or a percentage of capacity.
func threshold(v string, capacity resource.Quantity) resource.Quantity {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return resource.Quantity{}
		}
		return *resource.NewQuantity(int64(math.Ceil(float64(capacity.Value())*p/100)), resource.BinarySI)
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return resource.Quantity{}
	}
	return q
}

// NodeFor is the Node the launched instance's kubelet registers: the labels and taints from its
// user data, the labels the kubelet and the cloud controller add, and the reported resources.
func NodeFor(l Launch) *corev1.Node {
	labels := map[string]string{}
	for k, v := range l.Bootstrap.Labels {
		labels[k] = v
	}
	labels[corev1.LabelHostname] = l.NodeName
	labels[corev1.LabelArchStable] = l.Architecture
	os := l.OS
	if os == "" {
		os = "linux"
	}
	labels[corev1.LabelOSStable] = os
	if l.WindowsBuild != "" {
		labels[corev1.LabelWindowsBuild] = l.WindowsBuild
	}
	labels[corev1.LabelInstanceTypeStable] = l.Instance.InstanceType
	labels[corev1.LabelTopologyZone] = l.Instance.Zone
	labels[corev1.LabelTopologyRegion] = l.Region
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        l.NodeName,
			Labels:      labels,
			Annotations: map[string]string{fake.KwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{ProviderID: l.ProviderID(), Taints: append([]corev1.Taint(nil), l.Bootstrap.Taints...)},
		Status: corev1.NodeStatus{
			Capacity:    l.Capacity.DeepCopy(),
			Allocatable: l.Allocatable.DeepCopy(),
			Phase:       corev1.NodePending,
			NodeInfo:    corev1.NodeSystemInfo{Architecture: l.Architecture, OperatingSystem: os},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: l.Instance.PrivateIP},
				{Type: corev1.NodeInternalDNS, Address: l.NodeName}},
		},
	}
}
