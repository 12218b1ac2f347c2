package lifecycle

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/test/e2e/env"
)

// The clean-up a user does after trying the sandbox: what kube-controller-manager's garbage
// collector, namespace and TTL-after-finished controllers do in a real cluster, the sandbox does.

// TestDeletingADeploymentRemovesItsPodsAndThenItsNodes deletes a Deployment of 300 pods: the
// garbage collector removes its ReplicaSet and pods, and consolidation then removes the nodes
// left empty. kwok played every pod without a stage error: none was given two addresses.
func TestDeletingADeploymentRemovesItsPodsAndThenItsNodes(t *testing.T) {
	e := env.New(t)
	e.Apply("testdata/cleanup/fleet.yaml", "testdata/cleanup/burst.yaml")
	pods := e.WaitRunning("app=burst", 300, 3*time.Minute)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	t.Logf("300 pods on %d nodes", len(nodes))

	deleted := time.Now()
	if err := e.Cluster.Kube.AppsV1().Deployments("default").Delete(e.Ctx, "burst", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the ReplicaSet and pods of the deleted Deployment to be gone", 2*time.Minute, func() (bool, string) {
		sets, pods := count(e, "default", "app=burst")
		return sets == 0 && pods == 0, fmt.Sprintf("%d ReplicaSets, %d pods", sets, pods)
	})
	t.Logf("the ReplicaSet and pods were gone %.1f s after the Deployment was deleted", time.Since(deleted).Seconds())
	e.WaitFor("the empty nodes to be consolidated away", 2*time.Minute, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(claims.Items) == 0 && len(nodes.Items) == 0, fmt.Sprintf("%d NodeClaims, %d nodes", len(claims.Items), len(nodes.Items))
	})
	t.Logf("the nodes were gone %.1f s after the Deployment was deleted", time.Since(deleted).Seconds())
	expectNoStageErrors(e)
}

// TestDeletingANamespaceAndAFinishedJobCleanUp deletes one Deployment in the foreground (its
// ReplicaSet is gone before it is), orphans another's ReplicaSet (which keeps its pods), then
// deletes their namespace, which finishes; a Job with ttlSecondsAfterFinished goes away with its pod.
func TestDeletingANamespaceAndAFinishedJobCleanUp(t *testing.T) {
	e := env.New(t)
	e.Apply("testdata/cleanup/fleet.yaml", "testdata/cleanup/tryout.yaml")
	e.WaitRunning("app in (fore, orphan)", 4, 2*time.Minute)

	e.WaitFor("the finished Job and its pod to be gone", 2*time.Minute, func() (bool, string) {
		_, err := e.Cluster.Kube.BatchV1().Jobs("default").Get(e.Ctx, "once", metav1.GetOptions{})
		_, pods := count(e, "default", "app=once")
		return apierrors.IsNotFound(err) && pods == 0, fmt.Sprintf("Job: %v; %d pods", err, pods)
	})

	deployments := e.Cluster.Kube.AppsV1().Deployments("tryout")
	if err := deployments.Delete(e.Ctx, "fore", metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the Deployment deleted in the foreground to be gone", time.Minute, func() (bool, string) {
		_, err := deployments.Get(e.Ctx, "fore", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Deployment: %v", err)
	})
	if sets, pods := count(e, "tryout", "app=fore"); sets != 0 || pods != 0 {
		t.Errorf("the Deployment deleted in the foreground is gone before its dependents: %d ReplicaSets, %d pods left", sets, pods)
	}

	if err := deployments.Delete(e.Ctx, "orphan", metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the Deployment deleted orphaning its ReplicaSet to be gone", time.Minute, func() (bool, string) {
		_, err := deployments.Get(e.Ctx, "orphan", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Deployment: %v", err)
	})
	sets, err := e.Cluster.Kube.AppsV1().ReplicaSets("tryout").List(e.Ctx, metav1.ListOptions{LabelSelector: "app=orphan"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets.Items) != 1 || len(sets.Items[0].OwnerReferences) != 0 {
		t.Errorf("after an orphaning delete, want one ReplicaSet without owner; got %d", len(sets.Items))
	}
	e.WaitRunning("app=orphan", 2, 10*time.Second)

	if err := e.Cluster.Kube.CoreV1().Namespaces().Delete(e.Ctx, "tryout", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the deleted namespace to be gone", 2*time.Minute, func() (bool, string) {
		ns, err := e.Cluster.Kube.CoreV1().Namespaces().Get(e.Ctx, "tryout", metav1.GetOptions{})
		if err == nil {
			return false, fmt.Sprintf("namespace %s, conditions %v", ns.Status.Phase, ns.Status.Conditions)
		}
		return apierrors.IsNotFound(err), err.Error()
	})
	if _, pods := count(e, "tryout", ""); pods != 0 {
		t.Errorf("%d pods left in the deleted namespace", pods)
	}
	expectNoStageErrors(e)
}

// count counts the ReplicaSets and the pods in namespace with the label selector.
func count(e *env.Env, namespace, selector string) (replicaSets, pods int) {
	e.T.Helper()
	sets, err := e.Cluster.Kube.AppsV1().ReplicaSets(namespace).List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	list, err := e.Cluster.Kube.CoreV1().Pods(namespace).List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	return len(sets.Items), len(list.Items)
}

// expectNoStageErrors fails the test if kwok failed to play a stage: a pod or node whose status a
// kubelet would have reported and kwok did not, such as a pod given two IPv4 addresses.
func expectNoStageErrors(e *env.Env) {
	e.T.Helper()
	if n := e.Cluster.KubeletStageErrors(); n != 0 {
		e.T.Errorf("kwok failed to play %d stages (\"failed to apply stage\" in the log)", n)
	}
}
