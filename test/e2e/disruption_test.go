package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// A 20-replica Deployment spread over many small nodes is scaled to 3: the fleet shrinks to what
// the planner would launch for those 3 pods from scratch (within 5%), while no more pods are
// unready than the PDB allows and no more nodes are disrupting than the budget allows, at any
// sampled instant.
func TestScaleDownShrinksTheFleetWithinBudgetsAndPDBs(t *testing.T) {
	e := newEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	np := consolidatingPool("default", karpv1.Budget{Nodes: "2"})
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-size", Operator: "In", Values: []string{"large"}})
	e.createNodePool(np)
	e.createPDB("web", 1)
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf("web", 20, "600m", "256Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRunning("app=web", 20, 3*time.Minute)
	before, nodesBefore := e.fleetPrice("default")
	t.Logf("20 pods on %d nodes, $%.4f/h:%s", nodesBefore, before, describeNodes(e, "default"))

	budget := e.sample(50*time.Millisecond, func() string {
		if n, names := e.disrupting("default"); n > 2 {
			return fmt.Sprintf("%d nodes disrupting at once (budget 2):%s", n, names)
		}
		return ""
	})
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := e.cluster.Kube.AppsV1().Deployments("default").Get(e.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = new(int32)
		*d.Spec.Replicas = 3
		_, err = e.cluster.Kube.AppsV1().Deployments("default").Update(e.ctx, d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
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
	want := e.scratchPrice("default", "app=web")
	e.waitFor("the fleet to shrink to the planner's packing", 4*time.Minute, func() (bool, string) {
		price, nodes := e.fleetPrice("default")
		n, _ := e.disrupting("default")
		return n == 0 && price <= want*1.05 && e.readyPods("app=web") == 3,
			fmt.Sprintf("%d nodes at $%.4f/h (want $%.4f/h), %d disrupting:%s", nodes, price, want, n, describeNodes(e, "default"))
	})
	pdb.Stop(e, "the PodDisruptionBudget")
	budget.Stop(e, "the disruption budget")
	after, nodesAfter := e.fleetPrice("default")
	t.Logf("3 pods on %d nodes, $%.4f/h; from scratch the planner launches $%.4f/h", nodesAfter, after, want)

	evs := e.eventsFor("DisruptionTerminating", "Node")
	if len(evs) == 0 {
		t.Fatalf("no DisruptionTerminating Events on Nodes")
	}
	for _, ev := range evs {
		if !strings.HasPrefix(ev.Note, "Disrupting Node: ") || !strings.Contains(ev.Note, "/h") {
			t.Errorf("DisruptionTerminating Event does not say what and how much: %q", ev.Note)
		}
	}
	t.Logf("decisions: %v", notes(evs))
}
