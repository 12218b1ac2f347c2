package fake

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

func byName(types []*cloud.InstanceType) map[string]*cloud.InstanceType {
	out := map[string]*cloud.InstanceType{}
	for _, it := range types {
		out[it.Name] = it
	}
	return out
}

func offering(t *testing.T, it *cloud.InstanceType, zone, capacityType string) cloud.Offering {
	t.Helper()
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == capacityType {
			return o
		}
	}
	t.Fatalf("%s has no %s offering in %s", it.Name, capacityType, zone)
	return cloud.Offering{}
}

func TestCatalogShape(t *testing.T) {
	types := Catalog()
	// Several hundred types, as a region has: every row of families, each with its sizes.
	want := 0
	for _, f := range families {
		want += len(f.sizes)
	}
	if len(types) != want || len(types) < 400 {
		t.Fatalf("catalog has %d types, want %d (at least 400)", len(types), want)
	}
	for i := 1; i < len(types); i++ {
		if types[i-1].Name >= types[i].Name {
			t.Fatalf("catalog not sorted or has duplicates at %s, %s", types[i-1].Name, types[i].Name)
		}
	}
	if !strings.HasPrefix(Simulated, "SIMULATED") {
		t.Errorf("Simulated = %q", Simulated)
	}
}

func TestCatalogLabels(t *testing.T) {
	required := []string{
		corev1.LabelInstanceTypeStable, corev1.LabelArchStable, corev1.LabelOSStable,
		awsv1.LabelInstanceCategory, awsv1.LabelInstanceFamily, awsv1.LabelInstanceGeneration,
		awsv1.LabelInstanceSize, awsv1.LabelInstanceCPU, awsv1.LabelInstanceCPUManufacturer,
		awsv1.LabelInstanceMemory, awsv1.LabelInstanceNetworkBandwidth, awsv1.LabelInstanceEBSBandwidth,
		awsv1.LabelInstanceEncryptionInTransitSupported, awsv1.LabelInstanceCPUSustainedClockSpeedMhz,
	}
	for _, it := range Catalog() {
		for _, key := range required {
			if it.Labels[key] == "" {
				t.Errorf("%s: missing label %s", it.Name, key)
			}
		}
		family, size, _ := strings.Cut(it.Name, ".")
		l := it.Labels
		metal := strings.HasPrefix(size, "metal")
		if l[corev1.LabelInstanceTypeStable] != it.Name || l[awsv1.LabelInstanceFamily] != family ||
			l[awsv1.LabelInstanceSize] != size || l[corev1.LabelOSStable] != "linux" ||
			!strings.HasPrefix(family, l[awsv1.LabelInstanceCategory]+l[awsv1.LabelInstanceGeneration]) {
			t.Errorf("%s: inconsistent labels %v", it.Name, l)
		}
		// Bare metal has no hypervisor; the i3 family still runs on Xen; everything else on Nitro.
		wantHypervisor := map[bool]string{true: "", false: "nitro"}[metal]
		if family == "i3" && !metal {
			wantHypervisor = "xen"
		}
		if l[awsv1.LabelInstanceHypervisor] != wantHypervisor {
			t.Errorf("%s: hypervisor %q, want %q", it.Name, l[awsv1.LabelInstanceHypervisor], wantHypervisor)
		}
		// Graviton families carry a g after the generation (c6g, c7gd, x2gd, i4g); g4dn and g5
		// are GPU families on x86.
		wantArch := "amd64"
		if strings.Contains(strings.TrimPrefix(family, l[awsv1.LabelInstanceCategory]+l[awsv1.LabelInstanceGeneration]), "g") ||
			(family != "g4dn" && family != "g4ad" && strings.HasSuffix(family, "g")) {
			wantArch = "arm64"
		}
		if l[corev1.LabelArchStable] != wantArch {
			t.Errorf("%s: arch %s, want %s", it.Name, l[corev1.LabelArchStable], wantArch)
		}
		cpu, _ := strconv.ParseInt(l[awsv1.LabelInstanceCPU], 10, 64)
		memMiB, _ := strconv.ParseInt(l[awsv1.LabelInstanceMemory], 10, 64)
		if got := it.Capacity.Cpu().Value(); got != cpu {
			t.Errorf("%s: cpu capacity %d, label %d", it.Name, got, cpu)
		}
		if wantArch == "arm64" {
			memMiB -= 64
		}
		wantMem := resource.MustParse(strconv.FormatInt(memMiB-(memMiB*75+999)/1000, 10) + "Mi")
		if it.Capacity.Memory().Cmp(wantMem) != 0 {
			t.Errorf("%s: memory capacity %s, want %s (64 MiB off arm64, then 7.5%% VM overhead off)", it.Name, it.Capacity.Memory(), &wantMem)
		}
		for _, r := range []corev1.ResourceName{ResourceNvidiaGPU, awsv1.ResourceAMDGPU} {
			gpus := it.Capacity[r]
			if !gpus.IsZero() && l[awsv1.LabelInstanceGPUCount] != gpus.String() {
				t.Errorf("%s: %s capacity %s, gpu-count label %q", it.Name, r, &gpus, l[awsv1.LabelInstanceGPUCount])
			}
		}
		neuron := it.Capacity[awsv1.ResourceAWSNeuron]
		if !neuron.IsZero() && (l[awsv1.LabelInstanceAcceleratorCount] != neuron.String() || l[awsv1.LabelInstanceAcceleratorManufacturer] != "aws") {
			t.Errorf("%s: neuron capacity %s, labels %v", it.Name, &neuron, l)
		}
	}
}

// TestCatalogFamilies checks the shapes users select on: the accelerators with their device
// plugins' resources and Karpenter's labels, instance stores, EFA and metal.
func TestCatalogFamilies(t *testing.T) {
	types := byName(Catalog())
	for _, tc := range []struct {
		name   string
		labels map[string]string
		// capacity of extended resources; resources not listed must be absent.
		capacity map[corev1.ResourceName]int64
	}{
		{"g4dn.xlarge", map[string]string{awsv1.LabelInstanceGPUName: "t4", awsv1.LabelInstanceGPUManufacturer: "nvidia",
			awsv1.LabelInstanceGPUCount: "1", awsv1.LabelInstanceGPUMemory: "16384", awsv1.LabelInstanceLocalNVME: "125"},
			map[corev1.ResourceName]int64{ResourceNvidiaGPU: 1}},
		{"g4dn.12xlarge", map[string]string{awsv1.LabelInstanceGPUCount: "4"}, map[corev1.ResourceName]int64{ResourceNvidiaGPU: 4, awsv1.ResourceEFA: 1}},
		{"g4ad.xlarge", map[string]string{awsv1.LabelInstanceGPUName: "radeon-pro-v520", awsv1.LabelInstanceGPUManufacturer: "amd",
			awsv1.LabelInstanceCPUManufacturer: "amd"}, map[corev1.ResourceName]int64{awsv1.ResourceAMDGPU: 1}},
		{"g6.48xlarge", map[string]string{awsv1.LabelInstanceGPUName: "l4", awsv1.LabelInstanceLocalNVME: "7520"},
			map[corev1.ResourceName]int64{ResourceNvidiaGPU: 8, awsv1.ResourceEFA: 1}},
		{"p4d.24xlarge", map[string]string{awsv1.LabelInstanceGPUName: "a100", awsv1.LabelInstanceMemory: "1179648"},
			map[corev1.ResourceName]int64{ResourceNvidiaGPU: 8, awsv1.ResourceEFA: 4}},
		{"p5.48xlarge", map[string]string{awsv1.LabelInstanceGPUName: "h100", awsv1.LabelInstanceGPUMemory: "81920", awsv1.LabelInstanceLocalNVME: "30400"},
			map[corev1.ResourceName]int64{ResourceNvidiaGPU: 8, awsv1.ResourceEFA: 32}},
		{"inf2.xlarge", map[string]string{awsv1.LabelInstanceAcceleratorName: "inferentia2", awsv1.LabelInstanceAcceleratorManufacturer: "aws",
			awsv1.LabelInstanceAcceleratorCount: "1"}, map[corev1.ResourceName]int64{awsv1.ResourceAWSNeuron: 1, awsv1.ResourceAWSNeuronCore: 2}},
		{"inf2.48xlarge", map[string]string{awsv1.LabelInstanceAcceleratorCount: "12"}, map[corev1.ResourceName]int64{awsv1.ResourceAWSNeuron: 12, awsv1.ResourceAWSNeuronCore: 24}},
		{"trn1.32xlarge", map[string]string{awsv1.LabelInstanceAcceleratorName: "trainium", awsv1.LabelInstanceLocalNVME: "7600"},
			map[corev1.ResourceName]int64{awsv1.ResourceAWSNeuron: 16, awsv1.ResourceAWSNeuronCore: 32, awsv1.ResourceEFA: 8}},
		{"c5d.large", map[string]string{awsv1.LabelInstanceLocalNVME: "50"}, nil},
		{"m6id.xlarge", map[string]string{awsv1.LabelInstanceLocalNVME: "237"}, nil},
		{"r6id.2xlarge", map[string]string{awsv1.LabelInstanceLocalNVME: "474"}, nil},
		{"i4i.32xlarge", map[string]string{awsv1.LabelInstanceLocalNVME: "30000"}, map[corev1.ResourceName]int64{awsv1.ResourceEFA: 1}},
		{"c5n.18xlarge", map[string]string{awsv1.LabelInstanceNetworkBandwidth: "100000", awsv1.LabelInstanceEncryptionInTransitSupported: "true"},
			map[corev1.ResourceName]int64{awsv1.ResourceEFA: 1}},
		{"m5.metal", map[string]string{awsv1.LabelInstanceCPU: "96", awsv1.LabelInstanceEncryptionInTransitSupported: "false"}, nil},
		{"m7i-flex.large", map[string]string{awsv1.LabelInstanceCapacityFlex: "true", awsv1.LabelInstanceCategory: "m", awsv1.LabelInstanceGeneration: "7"}, nil},
		{"t3a.large", map[string]string{awsv1.LabelInstanceCPUManufacturer: "amd", awsv1.LabelInstanceMemory: "8192"}, nil},
		{"x2iedn.xlarge", map[string]string{awsv1.LabelInstanceMemory: "131072", awsv1.LabelInstanceLocalNVME: "118"}, nil},
	} {
		it := types[tc.name]
		if it == nil {
			t.Errorf("%s is not in the catalog", tc.name)
			continue
		}
		for k, v := range tc.labels {
			if it.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", tc.name, k, it.Labels[k], v)
			}
		}
		for _, r := range []corev1.ResourceName{ResourceNvidiaGPU, awsv1.ResourceAMDGPU, awsv1.ResourceAWSNeuron, awsv1.ResourceAWSNeuronCore, awsv1.ResourceEFA} {
			got := it.Capacity[r]
			if got.Value() != tc.capacity[r] {
				t.Errorf("%s: capacity %s = %s, want %d", tc.name, r, &got, tc.capacity[r])
			}
		}
	}
	// d3 stores on hard disks, which are not NVMe: no instance-local-nvme label.
	if v, ok := types["d3.xlarge"].Labels[awsv1.LabelInstanceLocalNVME]; ok {
		t.Errorf("d3.xlarge has instance-local-nvme %q; its disks are HDD", v)
	}
}

func TestCatalogAllocatable(t *testing.T) {
	types := byName(Catalog())
	// c5.2xlarge has the shape of the worked example in the notes (c6a.2xlarge, from a real log).
	for _, tc := range []struct {
		name                     string
		cpu, memory, pods, ephem string
	}{
		{"c5.2xlarge", "7910m", "14162Mi", "58", "17Gi"},
		{"m6g.large", "1930m", "6844Mi", "29", "17Gi"},
		{"r7i.4xlarge", "15890m", "118312Mi", "234", "17Gi"},
		{"m5.24xlarge", "95690m", "355262Mi", "737", "17Gi"},
	} {
		a := types[tc.name].Allocatable()
		for res, want := range map[corev1.ResourceName]string{
			corev1.ResourceCPU: tc.cpu, corev1.ResourceMemory: tc.memory,
			corev1.ResourcePods: tc.pods, corev1.ResourceEphemeralStorage: tc.ephem,
		} {
			got := a[res]
			if got.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s allocatable %s = %s, want %s", tc.name, res, &got, want)
			}
		}
	}
	if g := types["g5.12xlarge"].Allocatable()[ResourceNvidiaGPU]; g.Value() != 4 {
		t.Errorf("g5.12xlarge allocatable gpus = %s, want 4", &g)
	}
}

// TestAGravitonTypeHoldsLessThanAnIntelTypeOfTheSameMemory: harness seed 2518. Graviton kernels
// reserve 64 MiB for the contiguous memory allocator, and Karpenter, the AWS provider and the
// emulator's kubelets take it off. Seven 2 GiB pods and a 128 MiB DaemonSet pod ask 14464 MiB:
// an r5.large holds them, an r6g.large (14422 MiB on the AWS cloud) does not, and the fake's said
// 14481 MiB, so `tailor plan` launched a node that the AWS cloud needs twice as big.
func TestAGravitonTypeHoldsLessThanAnIntelTypeOfTheSameMemory(t *testing.T) {
	types := byName(Catalog())
	ask := resource.MustParse("14464Mi")
	for name, holds := range map[string]bool{"r5.large": true, "r6g.large": false} {
		mem := types[name].Allocatable()[corev1.ResourceMemory]
		if got := mem.Cmp(ask) >= 0; got != holds {
			t.Errorf("%s allocatable memory %s holds %s: %v, want %v", name, &mem, &ask, got, holds)
		}
	}
	if mem := types["r6g.large"].Allocatable()[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("14422Mi")) != 0 {
		t.Errorf("r6g.large allocatable memory %s, want 14422Mi as on the AWS cloud", &mem)
	}
}

func TestKubeReservedCPU(t *testing.T) {
	for vcpu, want := range map[int64]int64{1: 60, 2: 70, 4: 80, 8: 90, 16: 110, 96: 310} {
		if got := kubeReservedMilliCPU(vcpu); got != want {
			t.Errorf("kubeReservedMilliCPU(%d) = %d, want %d", vcpu, got, want)
		}
	}
}

func TestCatalogPrices(t *testing.T) {
	types := byName(Catalog())
	for _, it := range types {
		zones := map[string]int{}
		for _, o := range it.Offerings {
			zones[o.Zone]++
			if !o.Available || o.PricePerHour <= 0 {
				t.Errorf("%s %s/%s: available=%v price=%v", it.Name, o.Zone, o.CapacityType, o.Available, o.PricePerHour)
			}
		}
		for _, z := range Zones() {
			if zones[z] != 2 {
				t.Errorf("%s: %d offerings in %s, want on-demand and spot", it.Name, zones[z], z)
			}
			od := offering(t, it, z, karpv1.CapacityTypeOnDemand).PricePerHour
			spot := offering(t, it, z, karpv1.CapacityTypeSpot).PricePerHour
			if ratio := spot / od; ratio < 0.299 || ratio > 0.451 {
				t.Errorf("%s %s: spot %v is %.3f of on-demand %v, want 0.30-0.45", it.Name, z, spot, ratio, od)
			}
		}
	}
	onDemand := func(name string) float64 {
		return offering(t, types[name], ZoneA, karpv1.CapacityTypeOnDemand).PricePerHour
	}
	// Each pair is (cheaper, dearer) per hour for the same size.
	pairs := [][2]string{
		{"c6g", "c6i"}, {"c7g", "c7i"}, {"m6g", "m6i"}, {"m7g", "m7i"}, {"r6g", "r6i"}, {"r7g", "r7i"}, // arm64 < x86
		{"c5", "m5"}, {"m5", "r5"}, {"c6i", "m6i"}, {"m7g", "r7g"}, // c < m < r
		{"c5", "c6i"}, {"c6i", "c7i"}, {"m6g", "m7g"}, {"r5", "r6i"}, {"r6g", "r7g"}, // older < newer
	}
	for _, size := range []string{"large", "4xlarge", "12xlarge"} {
		for _, p := range pairs {
			cheap, dear := p[0]+"."+size, p[1]+"."+size
			if onDemand(cheap) >= onDemand(dear) {
				t.Errorf("%s costs %v, not less than %s at %v", cheap, onDemand(cheap), dear, onDemand(dear))
			}
		}
	}
	if got := onDemand("m6g.large") / onDemand("m6i.large"); got < 0.75 || got > 0.85 {
		t.Errorf("m6g/m6i on-demand ratio %.3f, want about 0.8", got)
	}
}

func TestCatalogReturnsCopies(t *testing.T) {
	first := Catalog()
	first[0].Labels[corev1.LabelArchStable] = "mutated"
	first[0].Offerings[0].PricePerHour = 1e6
	first[0].Capacity[corev1.ResourceCPU] = resource.MustParse("1000")
	second := Catalog()
	if second[0].Labels[corev1.LabelArchStable] == "mutated" || second[0].Offerings[0].PricePerHour == 1e6 ||
		second[0].Capacity.Cpu().Value() == 1000 {
		t.Fatalf("Catalog shares state between calls")
	}
}
