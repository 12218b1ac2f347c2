package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// launchOneNode runs a Deployment of n small pods on a single new node and returns that node.
func (e *env) launchOneNode(app string, n int32) *corev1.Node {
	e.t.Helper()
	e.applyExample("ec2nodeclass.yaml")
	e.applyExample("nodepool.yaml")
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf(app, n, "100m", "128Mi"), metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	pods := e.waitRunning("app="+app, int(n), 2*time.Minute)
	node, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != node.Name {
			e.t.Fatalf("pods of %s spread over several nodes; the test wants one", app)
		}
	}
	return node
}

func (e *env) waitNodeGone(name string, timeout time.Duration) {
	e.t.Helper()
	e.waitFor("node "+name+" to be gone", timeout, func() (bool, string) {
		_, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "node still there"
	})
}

func (e *env) instanceExists(providerID string) bool {
	for _, inst := range e.cloud.Instances() {
		if inst.ProviderID == providerID {
			return true
		}
	}
	return false
}

func (e *env) createPDB(app string, maxUnavailable int) {
	e.t.Helper()
	mu := intstr.FromInt32(int32(maxUnavailable))
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &mu,
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
	if _, err := e.cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Create(e.ctx, pdb, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// kubectl delete node: the node is tainted, drained through evictions, its pods run again on new
// capacity, the instance is terminated, and the node and its NodeClaim are gone.
func TestDeletingANodeDrainsItAndItsPodsMove(t *testing.T) {
	e := newEnv(t)
	node := e.launchOneNode("web", 3)
	if !hasString(node.Finalizers, karpv1.TerminationFinalizer) {
		t.Fatalf("node %s lacks finalizer %s: %v", node.Name, karpv1.TerminationFinalizer, node.Finalizers)
	}
	if err := e.cluster.Kube.CoreV1().Nodes().Delete(e.ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitNodeGone(node.Name, 2*time.Minute)
	if e.instanceExists(node.Spec.ProviderID) {
		t.Fatalf("instance %s survived its node", node.Spec.ProviderID)
	}
	pods := e.waitRunning("app=web", 3, 2*time.Minute)
	for _, p := range pods {
		if p.Spec.NodeName == node.Name {
			t.Fatalf("pod %s still on the deleted node", p.Name)
		}
	}
	e.waitFor("the NodeClaim of the deleted node to be gone", time.Minute, func() (bool, string) {
		claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range claims.Items {
			if c.Status.ProviderID == node.Spec.ProviderID {
				return false, "claim " + c.Name + " still there"
			}
		}
		return true, ""
	})
	evicted := e.events("default", "Evicted")
	if len(evicted) < 3 {
		t.Fatalf("%d Evicted events; want one per pod: %v", len(evicted), evicted)
	}
	// Capacity for the evicted pods was planned together, before they left: one new node, not one
	// per replacement pod.
	if n := len(e.cloud.Instances()); n != 1 {
		t.Fatalf("%d instances after the drain; want 1 replacement for the 3 pods", n)
	}
}

// A PDB that allows no disruption holds the drain, visibly; once it allows one, the drain goes on.
func TestDrainWaitsForPodDisruptionBudget(t *testing.T) {
	e := newEnv(t)
	node := e.launchOneNode("db", 2)
	e.createPDB("db", 0)
	if err := e.cluster.Kube.CoreV1().Nodes().Delete(e.ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the blocked drain to show on the NodeClaim and in an Event", time.Minute, func() (bool, string) {
		cond := e.claimConditionForNode(node, karpv1.ConditionTypeDrained)
		blocked := e.events("", "FailedDraining")
		ok := cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "EvictionBlocked" && len(blocked) > 0
		return ok, strings.Join(blocked, " | ")
	})
	time.Sleep(3 * time.Second) // the drain must still be holding
	if _, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, node.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("node went away while its PDB allowed no eviction: %v", err)
	}
	pdb, err := e.cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Get(e.ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb.Spec.MaxUnavailable = &one
	if _, err := e.cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Update(e.ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitNodeGone(node.Name, 2*time.Minute)
	e.waitRunning("app=db", 2, 2*time.Minute)
}

// The NodePool's terminationGracePeriod ends the wait: past it, pods are deleted despite the PDB.
func TestTerminationGracePeriodForcesDrainPastPDB(t *testing.T) {
	e := newEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	np := nodePool("graceful")
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 30 * time.Second}
	e.createNodePool(np)
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf("stuck", 2, "100m", "128Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.waitRunning("app=stuck", 2, 2*time.Minute)
	e.createPDB("stuck", 0)
	node := pods[0].Spec.NodeName
	if err := e.cluster.Kube.CoreV1().Nodes().Delete(e.ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the PDB to block the drain", time.Minute, func() (bool, string) {
		return len(e.events("", "FailedDraining")) > 0, "no FailedDraining event yet"
	})
	// Past the grace period, as Tailor sees time.
	e.clock.Step(time.Minute)
	e.waitNodeGone(node, time.Minute)
	if deleted := e.events("default", "Disrupted"); len(deleted) == 0 {
		t.Fatal("no Event says pods were deleted past the termination grace period")
	}
}

func (e *env) claimConditionForNode(node *corev1.Node, condType string) *metav1.Condition {
	claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
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

// events returns the notes of Events with that reason in namespace ("" for all).
func (e *env) events(namespace, reason string) []string {
	list, err := e.cluster.Kube.EventsV1().Events(namespace).List(e.ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		e.t.Fatal(err)
	}
	var notes []string
	for _, ev := range list.Items {
		notes = append(notes, ev.Note)
	}
	return notes
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
