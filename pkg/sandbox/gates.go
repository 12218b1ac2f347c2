package sandbox

import (
	"fmt"
	"sort"
	"strings"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubefeatures "k8s.io/kubernetes/pkg/features"
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
// gates: the gates are set there as well, so a gate is on for every component or for none.
func gateFlags(gates map[string]bool) ([]string, error) {
	if len(gates) == 0 {
		return nil, nil
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
		return nil, fmt.Errorf("sandbox feature gates: %w", err)
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
