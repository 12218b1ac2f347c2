package v1

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/apis/internal/conditions"
)

// NodePool condition types. Ready is rolled up from ValidationSucceeded and NodeClassReady.
const (
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	ConditionTypeNodeClassReady      = "NodeClassReady"
)

var nodePoolReadyDependents = []string{ConditionTypeValidationSucceeded, ConditionTypeNodeClassReady}

// NodePoolStatus is what the pool currently owns.
type NodePoolStatus struct {
	// Resources is the total capacity of the pool's nodes, with "nodes" holding their count, which
	// is what the Nodes column of kubectl get nodepools shows.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Conditions say whether the pool is usable (Ready) and why not.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// NodeClassObservedGeneration is the node class generation that the NodeClassReady condition
	// was computed from, so a stale Ready is not trusted after the node class changes.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
}

// SetCondition sets a condition on the pool (see NodeClaim.SetCondition); ValidationSucceeded and
// NodeClassReady roll up into Ready.
func (in *NodePool) SetCondition(condType string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	changed := conditions.Set(&in.Status.Conditions, in.Generation, condType, status, reason, message, now)
	if slices.Contains(nodePoolReadyDependents, condType) {
		changed = conditions.Rollup(&in.Status.Conditions, in.Generation, now, nodePoolReadyDependents...) || changed
	}
	return changed
}

// GetCondition returns the condition of that type, or nil.
func (in *NodePool) GetCondition(condType string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, condType)
}

// IsTrue reports whether the condition of that type exists and is True.
func (in *NodePool) IsTrue(condType string) bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, condType)
}
