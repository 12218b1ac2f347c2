package v1

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/apis/internal/conditions"
)

// NodeClaim condition types, as in Karpenter. Launched, Registered and Initialized are the steps of
// a launch; Ready is rolled up from them by SetCondition.
const (
	ConditionTypeLaunched             = "Launched"
	ConditionTypeRegistered           = "Registered"
	ConditionTypeInitialized          = "Initialized"
	ConditionTypeReady                = "Ready"
	ConditionTypeDrifted              = "Drifted"
	ConditionTypeConsolidatable       = "Consolidatable"
	ConditionTypeDrained              = "Drained"
	ConditionTypeVolumesDetached      = "VolumesDetached"
	ConditionTypeInstanceTerminating  = "InstanceTerminating"
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
	ConditionTypeDisruptionReason     = "DisruptionReason"
)

// nodeClaimReadyDependents are the conditions whose conjunction is a NodeClaim's Ready.
var nodeClaimReadyDependents = []string{ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized}

// NodeClaimStatus is what Tailor and the cloud learned about the claim's instance and node.
type NodeClaimStatus struct {
	// NodeName is the name of the Node that registered for this claim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud's ID of the instance, the same as the Node's spec.providerID.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the machine image the instance runs (an AMI ID on AWS).
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the node's expected full capacity.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the node's expected allocatable capacity.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions track the launch (Launched, Registered, Initialized, Ready) and disruption state.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is the last time a pod was bound to or left the node; consolidateAfter counts
	// from it.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}

// SetCondition sets a condition on the claim, stamped with the claim's generation. When the type is
// Launched, Registered or Initialized, Ready is recomputed from the three. It keeps
// lastTransitionTime when the status is unchanged and reports whether the status changed at all.
func (in *NodeClaim) SetCondition(condType string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	changed := conditions.Set(&in.Status.Conditions, in.Generation, condType, status, reason, message, now)
	if slices.Contains(nodeClaimReadyDependents, condType) {
		changed = conditions.Rollup(&in.Status.Conditions, in.Generation, now, nodeClaimReadyDependents...) || changed
	}
	return changed
}

// GetCondition returns the condition of that type, or nil.
func (in *NodeClaim) GetCondition(condType string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, condType)
}

// IsTrue reports whether the condition of that type exists and is True.
func (in *NodeClaim) IsTrue(condType string) bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, condType)
}

// ClearCondition removes the condition of that type (e.g. Drifted once a claim is no longer
// drifted, as Karpenter does), and reports whether it was there.
func (in *NodeClaim) ClearCondition(condType string) bool {
	return meta.RemoveStatusCondition(&in.Status.Conditions, condType)
}
