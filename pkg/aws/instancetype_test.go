package aws

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// c6a2xlarge is the shape of the worked example in Karpenter's issue tracker (aws#7356), whose
// logged allocatable the defaults must reproduce exactly.
func c6a2xlarge() ec2types.InstanceTypeInfo {
	return ec2types.InstanceTypeInfo{
		InstanceType:  "c6a.2xlarge",
		VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(8)},
		MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(16384)},
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{ec2types.ArchitectureTypeX8664}, Manufacturer: aws.String("AMD")},
		NetworkInfo:   &ec2types.NetworkInfo{MaximumNetworkInterfaces: aws.Int32(4), Ipv4AddressesPerInterface: aws.Int32(15)},
	}
}

func TestAllocatable(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name         string
		family       string
		kubelet      kubeletConfig
		reservedENIs int
		wantPods     int64
		wantCPU      string
		wantMemoryMi int64
	}{
		{name: "karpenter's worked example", family: awsv1.AMIFamilyAL2023, wantPods: 58, wantCPU: "7910m", wantMemoryMi: 14162},
		{name: "maxPods does not change AL2023's kube-reserved", family: awsv1.AMIFamilyAL2023, kubelet: kubeletConfig{maxPods: i32(110)},
			wantPods: 110, wantCPU: "7910m", wantMemoryMi: 14162},
		{name: "bottlerocket reserves for its max pods", family: awsv1.AMIFamilyBottlerocket, kubelet: kubeletConfig{maxPods: i32(110)},
			wantPods: 110, wantCPU: "7910m", wantMemoryMi: 15155 - (11*110 + 255) - 100},
		{name: "podsPerCore caps pods", family: awsv1.AMIFamilyAL2023, kubelet: kubeletConfig{podsPerCore: i32(4)},
			wantPods: 32, wantCPU: "7910m", wantMemoryMi: 14162},
		{name: "windows: 110 pods, kube-reserved for them", family: awsv1.AMIFamilyWindows2022,
			wantPods: 110, wantCPU: "7910m", wantMemoryMi: 15155 - (11*110 + 255) - 100},
		{name: "windows honours podsPerCore", family: awsv1.AMIFamilyWindows2025, kubelet: kubeletConfig{podsPerCore: i32(4)},
			wantPods: 32, wantCPU: "7910m", wantMemoryMi: 15155 - (11*32 + 255) - 100},
		// Reserved ENIs lower max-pods, not kube-reserved memory: Karpenter reserves for the
		// pods of every ENI (ENILimitedPods with no reserved ENIs).
		{name: "reserved ENIs", family: awsv1.AMIFamilyAL2023, reservedENIs: 1, wantPods: 44, wantCPU: "7910m", wantMemoryMi: 15155 - (11*58 + 255) - 100},
		{name: "user reservations and eviction", family: awsv1.AMIFamilyAL2023, kubelet: kubeletConfig{
			kubeReserved: map[string]string{"cpu": "200m"}, systemReserved: map[string]string{"memory": "200Mi", "cpu": "100m"},
			evictionHard: map[string]string{"memory.available": "512Mi"}},
			wantPods: 58, wantCPU: "7700m", wantMemoryMi: 15155 - 893 - 200 - 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := typeResources(c6a2xlarge(), tc.family, tc.kubelet, tc.reservedENIs, resource.MustParse("20Gi"), DefaultVMMemoryOverheadPercent)
			if err != nil {
				t.Fatal(err)
			}
			alloc := allocatable(r)
			cpu, mem, eph := alloc[corev1.ResourceCPU], alloc[corev1.ResourceMemory], alloc[corev1.ResourceEphemeralStorage]
			if r.pods != tc.wantPods || cpu.String() != tc.wantCPU || mem.Value() != tc.wantMemoryMi*mi || eph.Value() != 17<<30 {
				t.Errorf("pods %d cpu %s memory %dMi ephemeral %s; want %d, %s, %dMi, 17Gi",
					r.pods, cpu.String(), mem.Value()/mi, eph.String(), tc.wantPods, tc.wantCPU, tc.wantMemoryMi)
			}
			// Windows pods take the primary ENI's secondary IPs: 15 per ENI less the primary.
			wantIPs := int64(0)
			if awsv1.WindowsBuild(tc.family) != "" {
				wantIPs = 14
			}
			if ips := alloc[awsv1.ResourcePrivateIPv4Address]; ips.Value() != wantIPs {
				t.Errorf("%s = %s, want %d", awsv1.ResourcePrivateIPv4Address, ips.String(), wantIPs)
			}
		})
	}
}

func allocatable(r nodeResources) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range r.capacity {
		c := q.DeepCopy()
		if o, ok := r.overhead[name]; ok {
			c.Sub(o)
		}
		out[name] = c
	}
	return out
}

func TestBadKubeletQuantity(t *testing.T) {
	_, err := typeResources(c6a2xlarge(), awsv1.AMIFamilyAL2023, kubeletConfig{kubeReserved: map[string]string{"memory": "lots"}},
		0, resource.MustParse("20Gi"), DefaultVMMemoryOverheadPercent)
	if err == nil {
		t.Fatal("a malformed kubeReserved quantity must fail node class resolution, naming the field")
	}
}

func TestTypeLabels(t *testing.T) {
	info := c6a2xlarge()
	info.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{Name: aws.String("Radeon Pro V520"), Manufacturer: aws.String("AMD"), Count: aws.Int32(1),
		MemoryInfo: &ec2types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(8192)}}}}
	got := typeLabels(info)
	for k, want := range map[string]string{
		awsv1.LabelInstanceCategory: "c", awsv1.LabelInstanceGeneration: "6", awsv1.LabelInstanceFamily: "c6a", awsv1.LabelInstanceSize: "2xlarge",
		awsv1.LabelInstanceCPU: "8", awsv1.LabelInstanceMemory: "16384", awsv1.LabelInstanceCPUManufacturer: "amd",
		awsv1.LabelInstanceGPUName: "radeon-pro-v520", awsv1.LabelInstanceGPUManufacturer: "amd", awsv1.LabelInstanceGPUCount: "1",
		awsv1.LabelInstanceGPUMemory: "8192", corev1.LabelArchStable: "amd64",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}
