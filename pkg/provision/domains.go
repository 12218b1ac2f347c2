package provision

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// PodTopologySpread knows only the domains of the nodes it is shown. Before the first claim of a
// plan settles into a zone, no zone is a domain, so every pod of a zone-spread Deployment would
// pass on the first claim to settle: nothing counts as the emptier zone next door. The zones
// are real all the same: the claims that follow launch there, and the skew shows once they run.
//
// So, when weighing new claims for a pod that spreads (as Karpenter does), the plan also shows
// the plugins one empty node per zone, capacity type and architecture each NodePool may launch
// in: a domain with no pods. They are never a place for a pod, only something to count. Existing
// nodes and nodes in flight are weighed without them, as the scheduler itself sees the cluster.

// emptyDomains returns the empty nodes that stand for the domains the pools may launch in.
func emptyDomains(pools []*poolState) []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for _, ps := range pools {
		seen := map[string]bool{}
		for _, c := range ps.compatible { // cheapest first
			key := c.offering.Zone + "/" + c.offering.CapacityType + "/" + c.labels[corev1.LabelArchStable]
			if seen[key] {
				continue
			}
			seen[key] = true
			ni := framework.NewNodeInfo()
			ni.SetNode(c.templateNode(fmt.Sprintf("%s-domain-%d", ps.NodePool.Name, len(seen))))
			out = append(out, ni)
		}
	}
	return out
}

// spreads reports whether the pod has DoNotSchedule topology spread constraints, its own or, when
// it has none, the profile's defaults (keys).
func spreads(p *corev1.Pod, defaultKeys []string) bool {
	if len(p.Spec.TopologySpreadConstraints) == 0 {
		return len(defaultKeys) > 0
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}
