package env

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// LaunchOneNode runs a Deployment of n small pods on a single new node and returns that node.
func (e *Env) LaunchOneNode(app string, n int32) *corev1.Node {
	e.T.Helper()
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, DeploymentOf(app, n, "100m", "128Mi"), metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
	pods := e.WaitRunning("app="+app, int(n), 2*time.Minute)
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != node.Name {
			e.T.Fatalf("pods of %s spread over several nodes; the test wants one", app)
		}
	}
	return node
}

// WaitNodeGone waits until the Node named name is deleted.
func (e *Env) WaitNodeGone(name string, timeout time.Duration) {
	e.T.Helper()
	e.WaitFor("node "+name+" to be gone", timeout, func() (bool, string) {
		_, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "node still there"
	})
}

// InstanceExists says whether the fake cloud still has the instance of providerID.
func (e *Env) InstanceExists(providerID string) bool {
	for _, inst := range e.Cloud.Instances() {
		if inst.ProviderID == providerID {
			return true
		}
	}
	return false
}

// CreatePDB creates a PodDisruptionBudget over app=app allowing maxUnavailable pods down.
func (e *Env) CreatePDB(app string, maxUnavailable int) {
	e.T.Helper()
	mu := intstr.FromInt32(int32(maxUnavailable))
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &mu,
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
	if _, err := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Create(e.Ctx, pdb, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// ClaimConditionForNode is the condition condType of node's NodeClaim, nil if it has none.
func (e *Env) ClaimConditionForNode(node *corev1.Node, condType string) *metav1.Condition {
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	for _, c := range claims.Items {
		if c.Status.ProviderID == node.Spec.ProviderID {
			return c.GetCondition(condType)
		}
	}
	return nil
}

// Events returns the notes of Events with that reason in namespace ("" for all).
func (e *Env) Events(namespace, reason string) []string {
	list, err := e.Cluster.Kube.EventsV1().Events(namespace).List(e.Ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		e.T.Fatal(err)
	}
	var notes []string
	for _, ev := range list.Items {
		notes = append(notes, ev.Note)
	}
	return notes
}

// WaitForClaims waits until at least n NodeClaims exist.
func (e *Env) WaitForClaims(n int, timeout time.Duration) {
	e.T.Helper()
	e.WaitFor(fmt.Sprintf("%d NodeClaims", n), timeout, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(claims.Items) >= n, fmt.Sprintf("%d NodeClaims", len(claims.Items))
	})
}

// Scale sets d's replicas.
func (e *Env) Scale(d *appsv1.Deployment, replicas int32) {
	e.T.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.Cluster.Kube.AppsV1().Deployments(d.Namespace).Patch(e.Ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}
