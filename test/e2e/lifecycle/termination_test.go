package lifecycle

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// kubectl delete node: the node is tainted, drained through evictions, its pods run again on new
// capacity, the instance is terminated, and the node and its NodeClaim are gone.
func TestDeletingANodeDrainsItAndItsPodsMove(t *testing.T) {
	e := env.New(t)
	node := e.LaunchOneNode("web", 3)
	if !hasString(node.Finalizers, karpv1.TerminationFinalizer) {
		t.Fatalf("node %s lacks finalizer %s: %v", node.Name, karpv1.TerminationFinalizer, node.Finalizers)
	}
	if err := e.Cluster.Kube.CoreV1().Nodes().Delete(e.Ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitNodeGone(node.Name, 2*time.Minute)
	if e.InstanceExists(node.Spec.ProviderID) {
		t.Fatalf("instance %s survived its node", node.Spec.ProviderID)
	}
	pods := e.WaitRunning("app=web", 3, 2*time.Minute)
	for _, p := range pods {
		if p.Spec.NodeName == node.Name {
			t.Fatalf("pod %s still on the deleted node", p.Name)
		}
	}
	e.WaitFor("the NodeClaim of the deleted node to be gone", time.Minute, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
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
	evicted := e.Events("default", "Evicted")
	if len(evicted) < 3 {
		t.Fatalf("%d Evicted events; want one per pod: %v", len(evicted), evicted)
	}
	// Capacity for the evicted pods was planned together, before they left: one new node, not one
	// per replacement pod.
	if n := len(e.Cloud.Instances()); n != 1 {
		t.Fatalf("%d instances after the drain; want 1 replacement for the 3 pods", n)
	}
}

// A PDB that allows no disruption holds the drain, visibly; once it allows one, the drain goes on.
func TestDrainWaitsForPodDisruptionBudget(t *testing.T) {
	e := env.New(t)
	node := e.LaunchOneNode("db", 2)
	e.CreatePDB("db", 0)
	if err := e.Cluster.Kube.CoreV1().Nodes().Delete(e.Ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the blocked drain to show on the NodeClaim and in an Event", time.Minute, func() (bool, string) {
		cond := e.ClaimConditionForNode(node, karpv1.ConditionTypeDrained)
		blocked := e.Events("", "FailedDraining")
		ok := cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "EvictionBlocked" && len(blocked) > 0
		return ok, strings.Join(blocked, " | ")
	})
	time.Sleep(3 * time.Second) // the drain must still be holding
	if _, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, node.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("node went away while its PDB allowed no eviction: %v", err)
	}
	pdb, err := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Get(e.Ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb.Spec.MaxUnavailable = &one
	if _, err := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Update(e.Ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitNodeGone(node.Name, 2*time.Minute)
	e.WaitRunning("app=db", 2, 2*time.Minute)
}

// The NodePool's terminationGracePeriod ends the wait: past it, pods are deleted despite the PDB.
func TestTerminationGracePeriodForcesDrainPastPDB(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("graceful")
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 30 * time.Second}
	e.CreateNodePool(np)
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("stuck", 2, "100m", "128Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=stuck", 2, 2*time.Minute)
	e.CreatePDB("stuck", 0)
	node := pods[0].Spec.NodeName
	if err := e.Cluster.Kube.CoreV1().Nodes().Delete(e.Ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the PDB to block the drain", time.Minute, func() (bool, string) {
		return len(e.Events("", "FailedDraining")) > 0, "no FailedDraining event yet"
	})
	// Past the grace period, as Tailor sees time.
	e.Clock.Step(time.Minute)
	e.WaitNodeGone(node, time.Minute)
	if deleted := e.Events("default", "Disrupted"); len(deleted) == 0 {
		t.Fatal("no Event says pods were deleted past the termination grace period")
	}
}

// A pod that never finishes terminating (its kubelet is gone, or its deletion stopped halfway)
// holds its node until a minute past the end of its grace period, as in Karpenter; then the node
// and its instance go without it. The pod's finalizer stands in for the kubelet that never comes.
func TestAPodStuckTerminatingLetsItsNodeGo(t *testing.T) {
	e := env.New(t)
	node := e.LaunchOneNode("hung", 1)
	pods := e.WaitRunning("app=hung", 1, time.Minute)
	const hold = "e2e.tailor.sh/hung-kubelet"
	patch := []byte(`{"metadata":{"finalizers":["` + hold + `"]}}`)
	if _, err := e.Cluster.Kube.CoreV1().Pods("default").Patch(e.Ctx, pods[0].Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = e.Cluster.Kube.CoreV1().Pods("default").Patch(e.Ctx, pods[0].Name, types.MergePatchType, release, metav1.PatchOptions{})
	})
	if err := e.Cluster.Kube.CoreV1().Nodes().Delete(e.Ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the pod's eviction to be accepted", time.Minute, func() (bool, string) {
		p, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, pods[0].Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.DeletionTimestamp != nil, "pod " + p.Name + " not being deleted yet"
	})
	time.Sleep(3 * time.Second) // the drain must still be waiting for the pod
	if _, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, node.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("node went away while its pod was terminating within its grace period: %v", err)
	}
	// Past the minute, as Tailor sees time.
	e.Clock.Step(2 * time.Minute)
	e.WaitNodeGone(node.Name, time.Minute)
	if e.InstanceExists(node.Spec.ProviderID) {
		t.Fatalf("instance %s survived its node", node.Spec.ProviderID)
	}
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
