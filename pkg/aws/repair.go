package aws

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

var _ cloud.RepairPolicySource = (*Provider)(nil)

// RepairPolicies are the conditions Karpenter's AWS provider repairs on: the kubelet's Ready,
// and the conditions the EKS node monitoring agent reports. A broken accelerator is tolerated a
// shorter while, because a GPU node that cannot run its workload is expensive to keep waiting.
func (p *Provider) RepairPolicies() []cloud.RepairPolicy {
	const long, short = 30 * time.Minute, 10 * time.Minute
	return []cloud.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, Toleration: long},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, Toleration: long},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, Toleration: short},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, Toleration: long},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, Toleration: long},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, Toleration: long},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, Toleration: long},
	}
}
