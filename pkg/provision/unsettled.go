package provision

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// unsettledKeys are the keys the claim's requirements name that its stand-in n carries no label
// for: the launch picks one of several values (a zone of three, one of many instance types), and
// the node will carry it. Until then the plugins count the claim's pods in no domain of such a
// key, and a pod kept out of a domain passes there whichever it launches in.
func unsettledKeys(claim *karpv1.NodeClaim, n *corev1.Node) []string {
	var out []string
	for _, r := range claim.Spec.Requirements {
		if _, ok := n.Labels[r.Key]; !ok && r.Operator != corev1.NodeSelectorOpDoesNotExist && !slices.Contains(out, r.Key) {
			out = append(out, r.Key)
		}
	}
	return out
}

// settledFor returns the nodes of nodes a pod that reads topology (podKeys.topology) may be
// placed on: all of them, but for the stand-ins that leave one of those keys open (unsettled).
// The claims a plan opens settle such keys as their pods are added (Planner.settle); a claim in
// flight no longer can.
func settledFor(nodes []fwk.NodeInfo, unsettled map[string][]string, topology []string) []fwk.NodeInfo {
	if len(unsettled) == 0 || len(topology) == 0 {
		return nodes
	}
	open := func(ni fwk.NodeInfo) bool {
		return slices.ContainsFunc(unsettled[ni.Node().Name], func(k string) bool { return slices.Contains(topology, k) })
	}
	if !slices.ContainsFunc(nodes, open) {
		return nodes
	}
	return slices.DeleteFunc(slices.Clone(nodes), open)
}
