package cloud

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RepairPolicy says when a node is broken beyond waiting: its condition ConditionType has had
// ConditionStatus for longer than Toleration. Node repair replaces such nodes.
type RepairPolicy struct {
	ConditionType   corev1.NodeConditionType
	ConditionStatus corev1.ConditionStatus
	Toleration      time.Duration
}

// RepairPolicySource is implemented by clouds that know which node conditions their nodes
// report, such as the conditions of the EKS node monitoring agent. Clouds without it are repaired
// on the kubelet's Ready condition alone (DefaultRepairPolicies).
type RepairPolicySource interface {
	RepairPolicies() []RepairPolicy
}

// DefaultRepairPolicies are Karpenter's: a node not Ready (False, or Unknown because the kubelet
// stopped posting status) for 30 minutes is replaced.
func DefaultRepairPolicies() []RepairPolicy {
	return []RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, Toleration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, Toleration: 30 * time.Minute},
	}
}

// RepairPoliciesOf are the cloud's repair policies, or the defaults.
func RepairPoliciesOf(c CloudProvider) []RepairPolicy {
	if src, ok := c.(RepairPolicySource); ok {
		return src.RepairPolicies()
	}
	return DefaultRepairPolicies()
}
