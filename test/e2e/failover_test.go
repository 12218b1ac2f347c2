package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
)

// The leader crashes while a burst of 40 pods is being provisioned, once the first NodeClaims
// exist and before the pods run. The standby takes the Lease within the lease duration, plans
// the rest from what the API server holds, and every pod runs on a fleet with no capacity
// launched twice.
func TestFailoverDuringABurst(t *testing.T) {
	e, leader, standby := newFailoverEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	e.applyExample("nodepool.yaml")
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf("burst", 40, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the first NodeClaims of the burst", time.Minute, func() (bool, string) {
		claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(claims.Items) > 0, "no NodeClaim yet"
	})
	if running := e.readyPods("app=burst"); running == 40 {
		t.Fatal("every pod already runs; the crash would not be mid-burst")
	}
	left := e.nominationsNow("app=burst")
	e.failOver(leader, standby)
	e.waitRunning("app=burst", 40, 3*time.Minute)
	e.expectConverged(time.Minute)
	e.expectNominationsSettled(left)
	e.expectEveryNodeHolds("app=burst")
}

// The leader crashes at the first sign of a consolidation decision after a scale-down: a
// replacement launched, a node tainted, or a NodeClaim marked with a disruption reason. The
// standby undoes or finishes what was half done, and the fleet shrinks to what the planner would
// launch from scratch, without breaking the PodDisruptionBudget.
func TestFailoverDuringConsolidation(t *testing.T) {
	chaosOnly(t)
	e, leader, standby := newFailoverEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	np := consolidatingPool("default", karpv1.Budget{Nodes: "2"})
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-size", Operator: "In", Values: []string{"large"}})
	e.createNodePool(np)
	e.createPDB("web", 1)
	d, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf("web", 12, "600m", "256Mi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRunning("app=web", 12, 3*time.Minute)
	claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range claims.Items {
		known[c.Name] = true
	}
	e.scale(d, 3)
	e.waitFor("3 ready web pods", time.Minute, func() (bool, string) {
		n := e.readyPods("app=web")
		return n == 3, fmt.Sprintf("%d ready", n)
	})
	pdb := e.sample(20*time.Millisecond, func() string {
		if n := e.readyPods("app=web"); n < 2 {
			return fmt.Sprintf("only %d of 3 web pods ready; the PDB allows 1 unavailable", n)
		}
		return ""
	})
	e.waitFor("a consolidation decision", 2*time.Minute, func() (bool, string) {
		return e.decisionUnderway(known), "no decision yet"
	})
	e.failOver(leader, standby)
	want := e.scratchPrice("default", "app=web")
	e.waitFor("the fleet to shrink to the planner's packing", 3*time.Minute, func() (bool, string) {
		price, nodes := e.fleetPrice("default")
		n, _ := e.disrupting("default")
		return n == 0 && price <= want*1.05 && e.readyPods("app=web") == 3,
			fmt.Sprintf("%d nodes at $%.4f/h (want $%.4f/h), %d disrupting:%s", nodes, price, want, n, describeNodes(e, "default"))
	})
	pdb.Stop(e, "the PodDisruptionBudget")
	e.expectConverged(time.Minute)
	e.expectEveryNodeHolds("app=web")
}

// decisionUnderway says whether the disruption loop has started on a decision: a NodeClaim
// launched since known was taken (a replacement), a node tainted, or a claim given a reason.
func (e *env) decisionUnderway(known map[string]bool) bool {
	claims, err := e.cluster.Tailor.KarpenterV1().NodeClaims().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, c := range claims.Items {
		if !known[c.Name] || c.GetCondition(karpv1.ConditionTypeDisruptionReason) != nil || c.DeletionTimestamp != nil {
			return true
		}
	}
	nodes, err := e.cluster.Kube.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
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
	node := e.launchOneNode("db", 4)
	e.createPDB("db", 1)
	claim := e.claimOfNode(node)
	pdb := e.sample(20*time.Millisecond, func() string {
		if n := e.readyPods("app=db"); n < 3 {
			return fmt.Sprintf("only %d of 4 db pods ready; the PDB allows 1 unavailable", n)
		}
		return ""
	})
	if err := e.cluster.Tailor.KarpenterV1().NodeClaims().Delete(e.ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the first eviction", time.Minute, func() (bool, string) {
		return len(e.events("default", "Evicted")) > 0, "no pod evicted yet"
	})
	e.failOver(leader, standby)
	e.waitNodeGone(node.Name, 2*time.Minute)
	pods := e.waitRunning("app=db", 4, 2*time.Minute)
	pdb.Stop(e, "the PodDisruptionBudget")
	for _, p := range pods {
		if p.Spec.NodeName == node.Name {
			t.Fatalf("pod %s still on the drained node", p.Name)
		}
	}
	if e.instanceExists(node.Spec.ProviderID) {
		t.Fatalf("instance %s outlived its drained node", node.Spec.ProviderID)
	}
	e.expectConverged(time.Minute)
	e.expectEveryNodeHolds("app=db")
}

// A node that has been quiet for its pool's consolidateAfter stays Consolidatable across a
// failover. Before the fix the new leader took its informer's first listing of the pods for pods
// arriving, and every node's consolidateAfter began again on each failover or restart.
func TestFailoverKeepsConsolidateAfter(t *testing.T) {
	e, leader, standby := newFailoverEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	np := nodePool("default")
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(time.Hour)
	e.createNodePool(np)
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf("quiet", 2, "100m", "128Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.waitRunning("app=quiet", 2, 2*time.Minute)
	node, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Step(2 * time.Hour)
	consolidatable := func() (bool, string) {
		cond := e.claimConditionForNode(node, karpv1.ConditionTypeConsolidatable)
		if cond == nil {
			return false, "no Consolidatable condition"
		}
		return cond.Status == metav1.ConditionTrue, cond.Reason + ": " + cond.Message
	}
	e.waitFor("the node to be Consolidatable", time.Minute, consolidatable)
	e.failOver(leader, standby)
	kept := e.sample(50*time.Millisecond, func() string {
		if ok, why := consolidatable(); !ok {
			return "the new leader found node " + node.Name + " not Consolidatable: " + why
		}
		return ""
	})
	// The new leader starts Tailor as it starts scheduling, and reconciles every claim at once.
	time.Sleep(5 * time.Second)
	kept.Stop(e, "Consolidatable across the failover")
	if _, err := e.cluster.Kube.CoreV1().Pods("default").Create(e.ctx, pinnedPod("probe", node.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A real pod event still restarts the wait: the new leader's controller is alive.
	e.waitFor("the probe's binding to restart consolidateAfter", time.Minute, func() (bool, string) {
		ok, why := consolidatable()
		return !ok, why
	})
}
