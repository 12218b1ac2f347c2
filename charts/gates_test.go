package charts

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// keepFeatureGates puts back, when t ends, every feature gate of the process that t changed.
// kube-scheduler's --feature-gates set them process-wide (ComponentGlobalsRegistry.Set); a later
// test that runs a scheduler in this process (the upgrade test) must run with the gates of its
// own release, not with those of a release another test parsed (gangs on: the scheduler then
// waits for PodGroups that the API server does not serve).
func keepFeatureGates(t *testing.T) {
	t.Helper()
	was := map[featuregate.Feature]bool{}
	for f := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		was[f] = utilfeature.DefaultFeatureGate.Enabled(f)
	}
	t.Cleanup(func() {
		changed := map[string]bool{}
		for f, on := range was {
			if utilfeature.DefaultFeatureGate.Enabled(f) != on {
				changed[string(f)] = on
			}
		}
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(changed); err != nil {
			t.Errorf("putting back the feature gates %v: %v", changed, err)
		}
	})
}
