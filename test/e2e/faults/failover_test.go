package faults

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// The leader crashes while a burst of 40 pods is being provisioned, once the first NodeClaims
// exist and before the pods run. The standby takes the Lease within the lease duration, plans
// the rest from what the API server holds, and every pod runs on a fleet with no capacity
// launched twice.
func TestFailoverDuringABurst(t *testing.T) {
	e, leader, standby := newFailoverEnv(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("burst", 40, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the first NodeClaims of the burst", time.Minute, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(claims.Items) > 0, "no NodeClaim yet"
	})
	if running := e.ReadyPods("app=burst"); running == 40 {
		t.Fatal("every pod already runs; the crash would not be mid-burst")
	}
	left := nominationsNow(e, "app=burst")
	failOver(e, leader, standby)
	e.WaitRunning("app=burst", 40, 3*time.Minute)
	expectConverged(e, time.Minute)
	expectNominationsSettled(e, left)
	expectEveryNodeHolds(e, "app=burst")
}

// The leader crashes at the first sign of a consolidation decision after a scale-down: a
// replacement launched, a node tainted, or a NodeClaim marked with a disruption reason. The
// standby undoes or finishes what was half done, and the fleet shrinks to what the planner would
// launch from scratch, without breaking the PodDisruptionBudget.
func TestFailoverDuringConsolidation(t *testing.T) {
	chaosOnly(t)
	e, leader, standby := newFailoverEnv(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.ConsolidatingPool("default", karpv1.Budget{Nodes: "2"})
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-size", Operator: "In", Values: []string{"large"}})
	e.CreateNodePool(np)
	e.CreatePDB("web", 1)
	d, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("web", 12, "600m", "256Mi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=web", 12, 3*time.Minute)
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range claims.Items {
		known[c.Name] = true
	}
	e.Scale(d, 3)
	e.WaitFor("3 ready web pods", time.Minute, func() (bool, string) {
		n := e.ReadyPods("app=web")
		return n == 3, fmt.Sprintf("%d ready", n)
	})
	pdb := e.Sample(20*time.Millisecond, func() string {
		if n := e.ReadyPods("app=web"); n < 2 {
			return fmt.Sprintf("only %d of 3 web pods ready; the PDB allows 1 unavailable", n)
		}
		return ""
	})
	e.WaitFor("a consolidation decision", 2*time.Minute, func() (bool, string) {
		return decisionUnderway(e, known), "no decision yet"
	})
	failOver(e, leader, standby)
	want := e.ScratchPrice("default", "app=web")
	e.WaitFor("the fleet to shrink to the planner's packing", 3*time.Minute, func() (bool, string) {
		price, nodes := e.FleetPrice("default")
		n, _ := e.Disrupting("default")
		return n == 0 && price <= want*1.05 && e.ReadyPods("app=web") == 3,
			fmt.Sprintf("%d nodes at $%.4f/h (want $%.4f/h), %d disrupting:%s", nodes, price, want, n, env.DescribeNodes(e, "default"))
	})
	pdb.Stop(e, "the PodDisruptionBudget")
	expectConverged(e, time.Minute)
	expectEveryNodeHolds(e, "app=web")
}

// decisionUnderway says whether the disruption loop has started on a decision: a NodeClaim
// launched since known was taken (a replacement), a node tainted, or a claim given a reason.
func decisionUnderway(e *env.Env, known map[string]bool) bool {
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, c := range claims.Items {
		if !known[c.Name] || c.GetCondition(karpv1.ConditionTypeDisruptionReason) != nil || c.DeletionTimestamp != nil {
			return true
		}
	}
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for i := range nodes.Items {
		if nodetaint.IsDisrupted(&nodes.Items[i]) {
			return true
		}
	}
	return false
}

// The leader crashes while it drains a node (its NodeClaim was deleted, a PDB lets one pod go at
// a time): the standby finishes the drain, the instance is terminated, and the pods run
// elsewhere without the budget ever broken.
func TestFailoverDuringADrain(t *testing.T) {
	e, leader, standby := newFailoverEnv(t)
	node := e.LaunchOneNode("db", 4)
	e.CreatePDB("db", 1)
	claim := e.ClaimOfNode(node)
	pdb := e.Sample(20*time.Millisecond, func() string {
		if n := e.ReadyPods("app=db"); n < 3 {
			return fmt.Sprintf("only %d of 4 db pods ready; the PDB allows 1 unavailable", n)
		}
		return ""
	})
	if err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Delete(e.Ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the first eviction", time.Minute, func() (bool, string) {
		return len(e.Events("default", "Evicted")) > 0, "no pod evicted yet"
	})
	failOver(e, leader, standby)
	e.WaitNodeGone(node.Name, 2*time.Minute)
	pods := e.WaitRunning("app=db", 4, 2*time.Minute)
	pdb.Stop(e, "the PodDisruptionBudget")
	for _, p := range pods {
		if p.Spec.NodeName == node.Name {
			t.Fatalf("pod %s still on the drained node", p.Name)
		}
	}
	if e.InstanceExists(node.Spec.ProviderID) {
		t.Fatalf("instance %s outlived its drained node", node.Spec.ProviderID)
	}
	expectConverged(e, time.Minute)
	expectEveryNodeHolds(e, "app=db")
}

// A node that has been quiet for its pool's consolidateAfter stays Consolidatable across a
// failover. Before the fix the new leader took its informer's first listing of the pods for pods
// arriving, and every node's consolidateAfter began again on each failover or restart.
func TestFailoverKeepsConsolidateAfter(t *testing.T) {
	e, leader, standby := newFailoverEnv(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("default")
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(time.Hour)
	e.CreateNodePool(np)
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("quiet", 2, "100m", "128Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=quiet", 2, 2*time.Minute)
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.Clock.Step(2 * time.Hour)
	consolidatable := func() (bool, string) {
		cond := e.ClaimConditionForNode(node, karpv1.ConditionTypeConsolidatable)
		if cond == nil {
			return false, "no Consolidatable condition"
		}
		return cond.Status == metav1.ConditionTrue, cond.Reason + ": " + cond.Message
	}
	e.WaitFor("the node to be Consolidatable", time.Minute, consolidatable)
	failOver(e, leader, standby)
	kept := e.Sample(50*time.Millisecond, func() string {
		if ok, why := consolidatable(); !ok {
			return "the new leader found node " + node.Name + " not Consolidatable: " + why
		}
		return ""
	})
	// The new leader starts Tailor as it starts scheduling, and reconciles every claim at once.
	time.Sleep(5 * time.Second)
	kept.Stop(e, "Consolidatable across the failover")
	if _, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, env.PinnedPod("probe", node.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A real pod event still restarts the wait: the new leader's controller is alive.
	e.WaitFor("the probe's binding to restart consolidateAfter", time.Minute, func() (bool, string) {
		ok, why := consolidatable()
		return !ok, why
	})
}
