package kubelet_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/cloud/fake/kubelet"
)

// What the node says is fake.NodeFor's, tested in package fake; here, that it reaches the API
// server, and that joining again (a retry after a timeout) is not an error.
func TestJoinerRegistersNodeIdempotently(t *testing.T) {
	ctx := context.Background()
	client := kubefake.NewClientset()
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", Labels: map[string]string{corev1.LabelArchStable: "amd64"}}}
	inst := fake.Instance{ProviderID: "fake:///zone-c/i-1", Claim: claim}
	j := &kubelet.Joiner{Client: client}
	for i := 0; i < 2; i++ {
		if err := j.Join(ctx, inst); err != nil {
			t.Fatalf("Join %d: %v", i, err)
		}
	}
	node, err := client.CoreV1().Nodes().Get(ctx, "default-abcde", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node not registered: %v", err)
	}
	if node.Spec.ProviderID != inst.ProviderID || node.Annotations[fake.KwokNodeAnnotation] != "fake" || node.Labels[corev1.LabelArchStable] != "amd64" {
		t.Errorf("node = providerID %q annotations %v labels %v", node.Spec.ProviderID, node.Annotations, node.Labels)
	}
}
