package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// What `tailor sandbox --apply examples/ --until-settled --report json` does: the examples settle
// with every pod Running, and the report prices and describes the fleet.
func TestExamplesSettleWithEveryPodRunning(t *testing.T) {
	e := newEnv(t)
	if err := sandbox.ApplyFiles(e.ctx, e.cluster.Config, []string{"../../examples"}, nil); err != nil {
		t.Fatal(err)
	}
	var state *sandbox.State
	e.waitFor("the examples to settle", 2*time.Minute, func() (bool, string) {
		s, err := e.cluster.Read(e.ctx)
		if err != nil {
			return false, err.Error()
		}
		state = s
		return s.Settled() && len(s.Pods) > 0, "not settled"
	})
	pools, _, err := e.cluster.Tailor.NodePools.List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	report := state.Report(e.ctx, e.cluster.Cloud, pools)
	if !report.Settled {
		t.Fatal("report says not settled")
	}
	if len(report.Pods) == 0 || len(report.Nodes) == 0 {
		t.Fatalf("report has %d pods on %d nodes", len(report.Pods), len(report.Nodes))
	}
	placed := 0
	for _, p := range report.Pods {
		if p.Phase != string(corev1.PodRunning) || p.Node == "" {
			t.Errorf("pod %s is %s on %q (%s)", p.Name, p.Phase, p.Node, p.Reason)
		}
	}
	var sum float64
	for _, n := range report.Nodes {
		if n.NodePool != "default" || n.InstanceType == "" || n.Zone == "" || n.CapacityType == "" || n.PricePerHour <= 0 {
			t.Errorf("node %s is not fully described: %+v", n.Name, n)
		}
		if len(n.Allocatable) == 0 || n.Labels["karpenter.k8s.aws/instance-family"] == "" {
			t.Errorf("node %s lacks allocatable or instance labels", n.Name)
		}
		placed += len(n.Pods)
		sum += n.PricePerHour
	}
	if placed != len(report.Pods) {
		t.Errorf("nodes list %d pods, the cluster has %d", placed, len(report.Pods))
	}
	if report.PricePerHour != sum {
		t.Errorf("total price %v is not the sum of the nodes' %v", report.PricePerHour, sum)
	}
}
