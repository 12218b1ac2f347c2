package disruption

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// A 20-replica Deployment spread over many small nodes is scaled to 3: the fleet shrinks to what
// the planner would launch for those 3 pods from scratch (within 5%), while no more pods are
// unready than the PDB allows and no more nodes are disrupting than the budget allows, at any
// sampled instant.
func TestScaleDownShrinksTheFleetWithinBudgetsAndPDBs(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.ConsolidatingPool("default", karpv1.Budget{Nodes: "2"})
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-size", Operator: "In", Values: []string{"large"}})
	e.CreateNodePool(np)
	e.CreatePDB("web", 1)
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("web", 20, "600m", "256Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=web", 20, 3*time.Minute)
	before, nodesBefore := e.FleetPrice("default")
	t.Logf("20 pods on %d nodes, $%.4f/h:%s", nodesBefore, before, env.DescribeNodes(e, "default"))

	budget := e.Sample(50*time.Millisecond, func() string {
		if n, names := e.Disrupting("default"); n > 2 {
			return fmt.Sprintf("%d nodes disrupting at once (budget 2):%s", n, names)
		}
		return ""
	})
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := e.Cluster.Kube.AppsV1().Deployments("default").Get(e.Ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = new(int32)
		*d.Spec.Replicas = 3
		_, err = e.Cluster.Kube.AppsV1().Deployments("default").Update(e.Ctx, d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
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
	want := e.ScratchPrice("default", "app=web")
	e.WaitFor("the fleet to shrink to the planner's packing", 4*time.Minute, func() (bool, string) {
		price, nodes := e.FleetPrice("default")
		n, _ := e.Disrupting("default")
		return n == 0 && price <= want*1.05 && e.ReadyPods("app=web") == 3,
			fmt.Sprintf("%d nodes at $%.4f/h (want $%.4f/h), %d disrupting:%s", nodes, price, want, n, env.DescribeNodes(e, "default"))
	})
	pdb.Stop(e, "the PodDisruptionBudget")
	budget.Stop(e, "the disruption budget")
	after, nodesAfter := e.FleetPrice("default")
	t.Logf("3 pods on %d nodes, $%.4f/h; from scratch the planner launches $%.4f/h", nodesAfter, after, want)

	evs := e.EventsFor("DisruptionTerminating", "Node")
	if len(evs) == 0 {
		t.Fatalf("no DisruptionTerminating Events on Nodes")
	}
	for _, ev := range evs {
		if !strings.HasPrefix(ev.Note, "Disrupting Node: ") || !strings.Contains(ev.Note, "/h") {
			t.Errorf("DisruptionTerminating Event does not say what and how much: %q", ev.Note)
		}
	}
	t.Logf("decisions: %v", env.Notes(evs))
}
