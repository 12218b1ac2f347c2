package aws_test

import (
	"context"
	"testing"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
)

// TestInstanceTypeDevicesWithoutANodePool: the devices of a type are known from its name alone,
// as InstanceTypes gives them to a NodePool's types, and an unknown type is said to be unknown.
func TestInstanceTypeDevicesWithoutANodePool(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	sets, ok, err := e.provider.InstanceTypeDevices(ctx, "g5.12xlarge")
	if err != nil || !ok {
		t.Fatalf("g5.12xlarge: ok %v, %v", ok, err)
	}
	types, err := e.provider.InstanceTypes(ctx, pool())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range types {
		if it.Name != "g5.12xlarge" {
			continue
		}
		found = true
		if len(it.Devices) != len(sets) || len(sets) == 0 || sets[0].Driver != tailoraws.DriverNVIDIAGPU || len(sets[0].Devices) != len(it.Devices[0].Devices) {
			t.Errorf("by name: %+v; in the pool: %+v", sets, it.Devices)
		}
	}
	if !found {
		t.Fatal("the NodePool is not offered g5.12xlarge: nothing to compare with")
	}
	if sets[0].Driver != tailoraws.DriverNVIDIAGPU || len(sets[0].Devices) != 4 {
		t.Errorf("g5.12xlarge publishes %+v, want 4 NVIDIA GPUs first", sets)
	}
	if sets, ok, err := e.provider.InstanceTypeDevices(ctx, "x9.nonesuch"); ok || err != nil || sets != nil {
		t.Errorf("an unknown type: %v, ok %v, %v", sets, ok, err)
	}
}
