// Package hash computes the static hash of a NodePool's template and keeps it stamped on the
// NodePool and its NodeClaims: a NodeClaim whose hash differs from its pool's was launched from a
// template that has changed since, which is drift.
package hash

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Version versions how Hash is computed. A NodeClaim stamped with another version is never judged
// drifted by its hash (it is re-stamped instead), so changing the computation cannot roll the
// fleet.
const Version = "tailor-v1"

// Hash is the static hash of what a NodePool's nodes are made with and cannot pick up later:
// the template's labels, annotations, taints, startup taints and node class reference.
//
// Left out, as in Karpenter v1: requirements, because a node that still meets changed
// requirements need not go (they are checked against the node's labels instead, which is
// requirements drift); expireAfter and terminationGracePeriod, because they are behaviour, not
// the node's make-up, and changing them must not replace the fleet. Taints compare as sets, and
// empty lists and maps equal missing ones, so re-ordering or spelling out an empty field is not a
// change.
func Hash(np *karpv1.NodePool) string {
	t := np.Spec.Template
	doc, err := json.Marshal(struct {
		Labels        map[string]string          `json:"labels,omitempty"`
		Annotations   map[string]string          `json:"annotations,omitempty"`
		Taints        []taint                    `json:"taints,omitempty"`
		StartupTaints []taint                    `json:"startupTaints,omitempty"`
		NodeClassRef  *karpv1.NodeClassReference `json:"nodeClassRef,omitempty"`
	}{t.Labels, t.Annotations, taintSet(t.Spec.Taints), taintSet(t.Spec.StartupTaints), t.Spec.NodeClassRef})
	if err != nil {
		// Maps of strings and plain structs always marshal; "" never equals a real hash.
		return ""
	}
	h := fnv.New64a()
	_, _ = h.Write(doc)
	return strconv.FormatUint(h.Sum64(), 10)
}

// taint is the part of a taint that says what it does; TimeAdded is when, which is not.
type taint struct {
	Key    string             `json:"key"`
	Value  string             `json:"value,omitempty"`
	Effect corev1.TaintEffect `json:"effect"`
}

func taintSet(ts []corev1.Taint) []taint {
	out := make([]taint, 0, len(ts))
	for _, t := range ts {
		out = append(out, taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	slices.SortFunc(out, func(a, b taint) int {
		return strings.Compare(a.Key+"\x00"+a.Value+"\x00"+string(a.Effect), b.Key+"\x00"+b.Value+"\x00"+string(b.Effect))
	})
	return slices.Compact(out)
}

// Stamp sets the pool's current hash and version on annotations, which it returns (made if nil).
func Stamp(annotations map[string]string, np *karpv1.NodePool) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[karpv1.NodePoolHashAnnotationKey] = Hash(np)
	annotations[karpv1.NodePoolHashVersionAnnotationKey] = Version
	return annotations
}

// Stamped reports whether annotations carry this pool's current hash and version.
func Stamped(annotations map[string]string, np *karpv1.NodePool) bool {
	return annotations[karpv1.NodePoolHashVersionAnnotationKey] == Version &&
		annotations[karpv1.NodePoolHashAnnotationKey] == Hash(np)
}
