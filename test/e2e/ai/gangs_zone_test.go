package ai

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestGangSharesOneZone: a 3-pod gang whose PodGroup asks for one zone
// (schedulingConstraints.topology) gets NodeClaims that each require that one zone, and the
// scheduler, placing the gang by topology, binds all of it there.
func TestGangSharesOneZone(t *testing.T) {
	e := env.Start(t, nil, nil, func(o *sandbox.Options) { o.FeatureGates = sandbox.GangGates })
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(env.NodePool("gang",
		karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn,
			Values: []string{"c6g.xlarge", "m6g.xlarge"}}))
	group := gangGroup("ring", 3)
	group.Spec.SchedulingConstraints = &schedulingv1alpha2.PodGroupSchedulingConstraints{
		Topology: []schedulingv1alpha2.TopologyConstraint{{Key: corev1.LabelTopologyZone}}}
	createGangOf(e, group, env.PodSpec("3", "1Gi"), env.PodSpec("3", "1Gi"), env.PodSpec("3", "1Gi"))
	pods := e.WaitRunning("app=ring", 3, time.Minute)

	zones := map[string]bool{}
	for _, p := range pods {
		node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zones[node.Labels[corev1.LabelTopologyZone]] = true
	}
	if len(zones) != 1 {
		t.Errorf("the gang runs in zones %v; want one", zones)
	}
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		var zone []string
		for _, r := range c.Spec.Requirements {
			if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn {
				zone = r.Values
			}
		}
		if len(zone) != 1 || !zones[zone[0]] {
			t.Errorf("NodeClaim %s may launch in zones %v; want the gang's one zone %v", c.Name, zone, zones)
		}
	}
}
