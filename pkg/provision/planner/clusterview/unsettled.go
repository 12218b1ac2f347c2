package clusterview

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// unsettledKeys are the keys the claim's requirements name that its stand-in n carries no label
// for: the launch picks a value (a zone of three, one of many instance types, one that a NotIn or
// Gt leaves), and the node may carry it. Until then the plugins count the claim's pods in no domain of such a
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

// OpenKeys knows the claims in flight a plan may not put a pod on for the topology keys it reads
// (View.Unsettled). The claims of one plan are the same for every pod, and pods read few sets of
// keys, so the answer is kept per set.
type OpenKeys struct {
	byNode map[string][]string
	kept   map[string]map[string]bool
}

func NewOpenKeys(unsettled map[string][]string) *OpenKeys {
	return &OpenKeys{byNode: unsettled, kept: map[string]map[string]bool{}}
}

// PassOver returns the nodes a pod that reads topology (Keys.Topology) may not be placed on:
// the stand-ins that leave one of those keys open. The claims a plan opens settle such keys as
// their pods are added (Planner.settle); a claim in flight no longer can. nil when there are none.
func (o *OpenKeys) PassOver(topology []string) map[string]bool {
	if len(o.byNode) == 0 || len(topology) == 0 {
		return nil
	}
	set := strings.Join(topology, "\x00")
	if nodes, ok := o.kept[set]; ok {
		return nodes
	}
	var nodes map[string]bool
	for node, keys := range o.byNode {
		if slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(topology, k) }) {
			if nodes == nil {
				nodes = map[string]bool{}
			}
			nodes[node] = true
		}
	}
	o.kept[set] = nodes
	return nodes
}
