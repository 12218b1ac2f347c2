package aws

import (
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

func TestBuiltInDevicesFollowTheCatalogsFacts(t *testing.T) {
	types, err := FactsCatalog("us-east-1", []string{"us-east-1a"})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*cloud.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	devices := func(typ, driver string) []resourcev1.Device {
		it := byName[typ]
		if it == nil {
			t.Fatalf("%s is not in the catalog", typ)
		}
		for _, set := range it.Devices {
			if set.Driver == driver {
				return set.Devices
			}
		}
		return nil
	}
	p4d := devices("p4d.24xlarge", DriverNVIDIAGPU)
	if len(p4d) != 8 {
		t.Fatalf("p4d.24xlarge publishes %d GPUs, want 8", len(p4d))
	}
	if m := p4d[7].Capacity["memory"].Value; m.Cmp(resource.MustParse("40Gi")) != 0 || *p4d[7].Attributes["architecture"].StringValue != "Ampere" || p4d[7].Name != "gpu-7" {
		t.Errorf("p4d.24xlarge's last GPU is %+v, want gpu-7, Ampere, 40Gi", p4d[7])
	}
	if m := devices("g6e.xlarge", DriverNVIDIAGPU)[0].Capacity["memory"].Value; m.Cmp(resource.MustParse("40Gi")) <= 0 {
		t.Errorf("g6e.xlarge's L40S has %s, want more than 40Gi", m.String())
	}
	if got := devices("g4ad.2xlarge", DriverNVIDIAGPU); got != nil {
		t.Errorf("an AMD GPU type publishes NVIDIA devices: %v", got)
	}
	if got := devices("m6i.large", DriverNVIDIAGPU); got != nil || len(byName["m6i.large"].Devices) != 0 {
		t.Errorf("m6i.large publishes devices: %v", byName["m6i.large"].Devices)
	}
	if n := devices("inf2.48xlarge", DriverNeuron); len(n) != 12 || *n[0].Attributes["type"].StringValue != "inferentia2" {
		t.Errorf("inf2.48xlarge publishes %d Neuron devices (%v), want 12 inferentia2", len(n), n)
	}
	if e := devices("p5.48xlarge", DriverEFA); len(e) != 32 {
		t.Errorf("p5.48xlarge publishes %d EFA devices, want 32", len(e))
	}
}

func TestResourceSlicesOnePerDriverInTheNodesPool(t *testing.T) {
	sets := []cloud.DeviceSet{{Driver: DriverNVIDIAGPU, Devices: []resourcev1.Device{{Name: "gpu-0"}}}, {Driver: DriverEFA}}
	slices := cloud.ResourceSlices("ip-10-0-0-1.ec2.internal", sets)
	if len(slices) != 2 {
		t.Fatalf("%d slices, want 2", len(slices))
	}
	s := slices[0]
	if s.Name != "ip-10-0-0-1.ec2.internal-gpu.nvidia.com" || *s.Spec.NodeName != "ip-10-0-0-1.ec2.internal" || s.Spec.Pool.Name != *s.Spec.NodeName || s.Spec.Driver != DriverNVIDIAGPU {
		t.Errorf("slice %s: %+v", s.Name, s.Spec)
	}
	s.Spec.Devices[0].Name = "changed"
	if sets[0].Devices[0].Name != "gpu-0" {
		t.Error("the slice shares its devices with the instance type's")
	}
	long := cloud.SliceName(strings.Repeat("node", 70), "x")
	if len(long) > 253 {
		t.Errorf("slice name of %d characters", len(long))
	}
}
