package fake

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Joiner plays what happens inside a launched instance once it has booted: its kubelet
// registering a Node. The provider calls it once per instance, after Options.RegistrationDelay.
// kubelet.Joiner (pkg/cloud/fake/kubelet) registers NodeFor with an API server.
type Joiner interface {
	Join(ctx context.Context, instance Instance) error
}

// KwokNodeAnnotation hands the node to the kwok controller, which then plays its kubelet
// (heartbeats, Ready condition, pod status) the way kwok's own Karpenter provider relies on.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// NodeFor is the Node the instance's kubelet registers: the claim's labels and taints (startup
// taints included, as Karpenter passes both to the kubelet), plus the unregistered taint that
// Karpenter's registration removes once it has synced the claim onto the node.
//
// The node is named after its NodeClaim, as Karpenter's kwok provider names them: a real cloud
// names nodes after the machine (ip-10-0-0-1...), which Tailor learns only at registration, and
// nothing in Tailor may depend on the two names being equal.
func NodeFor(instance Instance) *corev1.Node {
	claim := instance.Claim
	labels := make(map[string]string, len(claim.Labels)+1)
	for k, v := range claim.Labels {
		labels[k] = v
	}
	labels[corev1.LabelHostname] = claim.Name

	var taints []corev1.Taint
	for _, group := range [][]corev1.Taint{claim.Spec.Taints, claim.Spec.StartupTaints, {karpv1.UnregisteredNoExecuteTaint}} {
		for _, t := range group {
			if !hasTaint(taints, t) {
				taints = append(taints, t)
			}
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        claim.Name,
			Labels:      labels,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{
			ProviderID: instance.ProviderID,
			Taints:     taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    claim.Status.Capacity.DeepCopy(),
			Allocatable: claim.Status.Allocatable.DeepCopy(),
			Phase:       corev1.NodePending,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    labels[corev1.LabelArchStable],
				OperatingSystem: labels[corev1.LabelOSStable],
			},
		},
	}
}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for _, have := range taints {
		if have.Key == t.Key && have.Effect == t.Effect {
			return true
		}
	}
	return false
}
