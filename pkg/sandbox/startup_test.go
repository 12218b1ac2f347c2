package sandbox

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestTheStartupTaintAgentClearsStartupTaintsOnceTheNodeIsReady(t *testing.T) {
	agentTaint := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "example.com/dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{agentTaint, dedicated}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}},
	}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-a"},
		Spec:       karpv1.NodeClaimSpec{Taints: []corev1.Taint{dedicated}, StartupTaints: []corev1.Taint{agentTaint}},
		Status:     karpv1.NodeClaimStatus{NodeName: "node-a"},
	}
	// A node whose claim has no startup taints keeps the taint of the same key.
	other := node.DeepCopy()
	other.Name = "node-b"
	other.Status.Conditions[0].Status = corev1.ConditionTrue
	otherClaim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-b"}, Status: karpv1.NodeClaimStatus{NodeName: "node-b"}}
	// A node that never becomes Ready keeps its startup taint.
	booting := node.DeepCopy()
	booting.Name = "node-c"
	bootingClaim := claim.DeepCopy()
	bootingClaim.Name, bootingClaim.Status.NodeName = "claim-c", "node-c"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp, err := StartControlPlane(t, filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if err := InstallCRDs(ctx, cp.Config); err != nil {
		t.Fatal(err)
	}
	kube, tailor, err := clientsFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*corev1.Node{node, other, booting} {
		created, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.DeepCopyInto(&created.Status)
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*karpv1.NodeClaim{claim, otherClaim, bootingClaim} {
		c.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
		c.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{}
		created, err := tailor.KarpenterV1().NodeClaims().Create(ctx, c, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Status.DeepCopyInto(&created.Status)
		if _, err := tailor.KarpenterV1().NodeClaims().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	StartStartupTaintAgent(ctx, kube, tailor)

	taints := func(name string) []corev1.Taint {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Spec.Taints
	}
	ready, err := kube.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(taints("node-a")) == 1, nil
	})
	if err != nil {
		t.Fatalf("node-a's startup taint is still there once it is Ready: %v", taints("node-a"))
	}
	if got := taints("node-a"); !slices.ContainsFunc(got, func(t corev1.Taint) bool { return dedicated.MatchTaint(&t) }) {
		t.Errorf("node-a lost the pool's own taint: %v", got)
	}
	// node-a's change shows the agent at work: the others were queued before it.
	if got := taints("node-b"); len(got) != 2 {
		t.Errorf("node-b's claim has no startup taints, yet its taints became %v", got)
	}
	if got := taints("node-c"); len(got) != 2 {
		t.Errorf("node-c is not Ready, yet its taints became %v", got)
	}
}
