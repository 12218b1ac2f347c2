package v1

// The NodePool hash lives beside the type, as in Karpenter, so that whoever writes a NodeClaim
// (the planner's caller, disruption's replacements) stamps it without linking the controller that
// keeps pools stamped.

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NodePoolHashVersion versions how NodePool.Hash is computed. A NodeClaim stamped with another
// version is never judged drifted by its hash (it is re-stamped instead), so changing the
// computation cannot roll the fleet.
const NodePoolHashVersion = "tailor-v1"

// Hash is the static hash of what a NodePool's nodes are made with and cannot pick up later:
// the template's labels, annotations, taints, startup taints and node class reference.
//
// Left out, as in Karpenter v1: requirements, because a node that still meets changed
// requirements need not go (they are checked against the node's labels instead, which is
// requirements drift); expireAfter and terminationGracePeriod, because they are behaviour, not
// the node's make-up, and changing them must not replace the fleet. Taints compare as sets, and
// empty lists and maps equal missing ones, so re-ordering or spelling out an empty field is not a
// change.
func (in *NodePool) Hash() string {
	t := in.Spec.Template
	doc, err := json.Marshal(struct {
		Labels        map[string]string   `json:"labels,omitempty"`
		Annotations   map[string]string   `json:"annotations,omitempty"`
		Taints        []hashedTaint       `json:"taints,omitempty"`
		StartupTaints []hashedTaint       `json:"startupTaints,omitempty"`
		NodeClassRef  *NodeClassReference `json:"nodeClassRef,omitempty"`
	}{t.Labels, t.Annotations, hashedTaints(t.Spec.Taints), hashedTaints(t.Spec.StartupTaints), t.Spec.NodeClassRef})
	if err != nil {
		// Maps of strings and plain structs always marshal; "" never equals a real hash.
		return ""
	}
	h := fnv.New64a()
	_, _ = h.Write(doc)
	return strconv.FormatUint(h.Sum64(), 10)
}

// hashedTaint is the part of a taint that says what it does; TimeAdded is when, which is not.
type hashedTaint struct {
	Key    string             `json:"key"`
	Value  string             `json:"value,omitempty"`
	Effect corev1.TaintEffect `json:"effect"`
}

func hashedTaints(ts []corev1.Taint) []hashedTaint {
	out := make([]hashedTaint, 0, len(ts))
	for _, t := range ts {
		out = append(out, hashedTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	slices.SortFunc(out, func(a, b hashedTaint) int {
		return strings.Compare(a.Key+"\x00"+a.Value+"\x00"+string(a.Effect), b.Key+"\x00"+b.Value+"\x00"+string(b.Effect))
	})
	return slices.Compact(out)
}
