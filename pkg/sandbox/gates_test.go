package sandbox

import (
	"slices"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// The gang gates a sandbox turns on are the process's: they must be off again once the test that
// started it ends, or the next sandbox of the process, started without them, gets a scheduler that
// waits for PodGroups its API server does not serve (a gang e2e test, then a ProvisioningRequest
// one, in one go test process).
func TestGateFlagsPutTheGatesBackWhenTheTestEnds(t *testing.T) {
	for name := range GangGates {
		if utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name)) {
			t.Fatalf("%s is on before the test: its default changed, or something else in this process set it", name)
		}
	}
	t.Run("sandbox", func(t *testing.T) {
		flags, err := gateFlags(t, GangGates)
		if err != nil {
			t.Fatal(err)
		}
		for name := range GangGates {
			if !utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name)) {
				t.Errorf("%s is off in the process while the sandbox asks for it", name)
			}
		}
		if !slices.Contains(flags, "--runtime-config=scheduling.k8s.io/v1alpha2=true") {
			t.Errorf("flags %v do not serve the Workload API the gates need", flags)
		}
	})
	for name := range GangGates {
		if utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name)) {
			t.Errorf("%s is still on after the test that set it ended", name)
		}
	}
	if flags, err := gateFlags(t, nil); err != nil || flags != nil {
		t.Errorf("no gates: flags %v, error %v; want none", flags, err)
	}
}
