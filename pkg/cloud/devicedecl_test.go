package cloud

import (
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseDeviceTemplates(t *testing.T) {
	text := `
- instanceTypes: ["g6e.*", "p5.48xlarge"]
  driver: fpga.example.com
  devices: 2
  namePrefix: fpga
  attributes: {model: VU9P, generation: 3, ecc: true, example.com/firmware: {version: 1.2.0}}
  capacity: {memory: 64Gi, lanes: 16}
- driver: efa.aws.com
  devices: 0
`
	got, err := ParseDeviceTemplates("EC2NodeClass", "gpu", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Set.Devices) != 2 || len(got[1].Set.Devices) != 0 {
		t.Fatalf("parsed %+v", got)
	}
	d := got[0].Set.Devices[1]
	a := d.Attributes
	if d.Name != "fpga-1" || *a["index"].IntValue != 1 || *a["model"].StringValue != "VU9P" || *a["generation"].IntValue != 3 ||
		!*a["ecc"].BoolValue || *a["example.com/firmware"].VersionValue != "1.2.0" {
		t.Errorf("device %+v", d)
	}
	m, lanes := d.Capacity["memory"].Value, d.Capacity["lanes"].Value
	if m.Cmp(resource.MustParse("64Gi")) != 0 || lanes.Cmp(resource.MustParse("16")) != 0 {
		t.Errorf("capacity %+v", d.Capacity)
	}

	builtIn := []DeviceSet{{Driver: "gpu.nvidia.com", Devices: []resourcev1.Device{{Name: "gpu-0"}}}, {Driver: "efa.aws.com", Devices: []resourcev1.Device{{Name: "efa-0"}}}}
	sets, changed := ApplyDeviceTemplates("g6e.xlarge", builtIn, got)
	if !changed || len(sets) != 2 || sets[0].Driver != "gpu.nvidia.com" || sets[1].Driver != "fpga.example.com" {
		t.Errorf("g6e.xlarge: %+v, want the GPU kept, EFA removed, the FPGAs added", sets)
	}
	if sets, _ := ApplyDeviceTemplates("m5.large", builtIn, got[:1]); len(sets) != 2 || sets[1].Driver != "efa.aws.com" {
		t.Errorf("m5.large, selected by no template, got %+v", sets)
	}
	if len(builtIn) != 2 || builtIn[1].Driver != "efa.aws.com" {
		t.Errorf("the built-in sets were changed: %+v", builtIn)
	}
}

func TestParseDeviceTemplatesRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`driver: x`, "not a list of device templates"},
		{`[{devices: 1}]`, "entry 1: driver: required"},
		{`[{driver: Not_A_Domain, devices: 1}]`, `driver "Not_A_Domain": must be a DNS subdomain`},
		{`[{driver: a.com, devices: 1}, {driver: b.com}]`, `entry 2: driver "b.com": devices: required`},
		{`[{driver: a.com, devices: 500}]`, "a count from 0 to 128"},
		{`[{driver: a.com, devices: 1, instanceTypes: ["g5.["]}]`, `instanceTypes: "g5.[" is not a glob`},
		{`[{driver: a.com, devices: 1, namePrefix: GPU}]`, `namePrefix "GPU"`},
		{`[{driver: a.com, devices: 1, attributes: {"bad name": 1}}]`, `attributes "bad name": must be a C identifier`},
		{`[{driver: a.com, devices: 1, attributes: {index: 1}}]`, `attributes "index": set by Tailor`},
		{`[{driver: a.com, devices: 1, attributes: {speed: 2.5}}]`, `attributes "speed": 2.5 is not a bool`},
		{`[{driver: a.com, devices: 1, capacity: {memory: lots}}]`, `capacity "memory": "lots" is not a quantity`},
		{`[{driver: a.com, devices: 1, colour: red}]`, `unknown field "colour"`},
	} {
		_, err := ParseDeviceTemplates("NodePool", "gpu", c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `NodePool "gpu" annotation tailor.sh/devices`) {
			t.Errorf("%s: error %v, want one naming the NodePool, the annotation and %q", c.text, err, c.want)
		}
	}
}
