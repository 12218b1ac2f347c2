package harness

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/workload"
)

// A drift that cannot finish because the scale-down left a budget allowing no disruption (seeds
// 6000, 2580 and 2584: minAvailable equal to the replicas left) is named as such; a claim left for
// no reason the harness can see is named unexplained.
func TestDriftHeldNamesTheBudgetThatAllowsNoDisruption(t *testing.T) {
	claim := func(name, node string) karpv1.NodeClaim {
		return karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: karpv1.NodeClaimStatus{NodeName: node}}
	}
	pod := func(name, node, app string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: workload.Namespace, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	minAvailable := intstr.FromInt32(1)
	pdb := policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: workload.Namespace},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web-1"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1}}
	node := func(name string) corev1.Node { return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	renewed := claim("pool-0-new", "n3")
	renewed.Labels = map[string]string{driftLabel: "2"}
	r := &Reading{State: &sandbox.State{
		Nodes:  []corev1.Node{node("n1"), node("n2"), node("n3")},
		Claims: []karpv1.NodeClaim{claim("pool-0-held", "n1"), claim("pool-0-free", "n2"), renewed},
		Pods:   []corev1.Pod{pod("web-1-a", "n1", "web-1"), pod("web-3-a", "n2", "web-3"), pod("web-1-b", "n3", "web-1")},
	}}
	got := driftHeld(r, []policyv1.PodDisruptionBudget{pdb})
	if len(got) != 2 {
		t.Fatalf("driftHeld = %q, want one line per claim from the old template", got)
	}
	if !strings.Contains(got[0], "NodeClaim pool-0-held: PodDisruptionBudget harness/web-1 allows no disruption of pod harness/web-1-a") {
		t.Errorf("held claim: %q", got[0])
	}
	if got[1] != "NodeClaim pool-0-free: unexplained" {
		t.Errorf("claim with nothing holding it: %q", got[1])
	}
}
