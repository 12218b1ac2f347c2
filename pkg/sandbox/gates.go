package sandbox

import (
	"fmt"
	"sort"
	"strings"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	kubefeatures "k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// GangGates are the feature gates gang scheduling needs, in the API server (the Workload API,
// scheduling.k8s.io/v1alpha2, and pods' spec.schedulingGroup) and in the scheduler (the
// GangScheduling plugin), and the one that lets a PodGroup ask for one topology domain
// (spec.schedulingConstraints.topology, placed by the TopologyPlacementGenerator plugin); all
// alpha in Kubernetes 1.36, off by default.
var GangGates = map[string]bool{string(kubefeatures.GenericWorkload): true, string(kubefeatures.GangScheduling): true,
	string(kubefeatures.TopologyAwareWorkloadScheduling): true}

// gateFlags are kube-apiserver's flags for gates, and the API groups they need served. The
// control plane, the scheduler and the controllers run in one process and share its feature
// gates: the gates are set there as well, so a gate is on for every component or for none. They
// are set for tb's lifetime and put back when it ends: left on, a later sandbox of the same
// process that asks for no gates would run a scheduler waiting forever for PodGroups that its
// API server, started without the flags, does not serve.
func gateFlags(tb ktesting.TB, gates map[string]bool) ([]string, error) {
	if len(gates) == 0 {
		return nil, nil
	}
	overrides := featuregatetesting.FeatureOverrides{}
	for name, on := range gates {
		overrides[featuregate.Feature(name)] = on
	}
	// It reports a gate it cannot set through tb, as a test's own override would be reported.
	featuregatetesting.SetFeatureGatesDuringTest(tb, utilfeature.DefaultFeatureGate, overrides)
	for name, on := range gates {
		if utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name)) != on {
			return nil, fmt.Errorf("sandbox feature gates: %s could not be set to %t", name, on)
		}
	}
	names := make([]string, 0, len(gates))
	for name := range gates {
		names = append(names, name)
	}
	sort.Strings(names)
	pairs := make([]string, len(names))
	for i, name := range names {
		pairs[i] = fmt.Sprintf("%s=%t", name, gates[name])
	}
	flags := []string{"--feature-gates=" + strings.Join(pairs, ",")}
	if gates[string(kubefeatures.GenericWorkload)] {
		flags = append(flags, "--runtime-config=scheduling.k8s.io/v1alpha2=true")
	}
	return flags, nil
}
