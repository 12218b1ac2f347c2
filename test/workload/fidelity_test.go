package workload

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The fidelity shapes come often enough that a hundred seeds try each, and each is valid as
// drawn: rack values are the pools' own, a pool's zone label is a zone it allows, and no
// scenario makes more than MaxPods pods.
func TestFidelityShapesAreDrawnAndValid(t *testing.T) {
	counts := map[string]int{}
	for seed := range uint64(400) {
		s := Generate(seed)
		if n := s.Pods(); n > MaxPods {
			t.Errorf("seed %d: %d pods, over %d", seed, n, MaxPods)
		}
		owner := map[string]string{}
		for _, np := range s.NodePools {
			var allowed []string
			for _, req := range np.Spec.Template.Spec.Requirements {
				switch {
				case req.Key == RackLabel:
					counts["rack"]++
					for _, v := range req.Values {
						if o, ok := owner[v]; ok {
							t.Errorf("seed %d: rack %s offered by both %s and %s", seed, v, o, np.Name)
						}
						owner[v] = np.Name
					}
				case req.Key == corev1.LabelTopologyZone && req.Operator == corev1.NodeSelectorOpIn:
					allowed = req.Values
				}
			}
			if z, ok := np.Spec.Template.Labels[corev1.LabelTopologyZone]; ok {
				counts["zone-label"]++
				if allowed != nil && !strings.Contains(strings.Join(allowed, ","), z) {
					t.Errorf("seed %d: pool %s is labelled zone %s but requires %v", seed, np.Name, z, allowed)
				}
			}
		}
		for _, d := range s.Deployments {
			if d.Name == "preferences" {
				counts["preferences"]++
			}
		}
	}
	for _, shape := range []string{"rack", "zone-label", "preferences"} {
		if counts[shape] < 40 {
			t.Errorf("%s drawn %d times in 400 seeds, want 40 or more", shape, counts[shape])
		}
	}
}
