package provision

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func onNodeNamed(node string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

// The pods of a node that is being deleted or disrupted are planned for before they are evicted,
// and the node offers no room; pods that tolerate the disruption, and DaemonSet pods, stay.
func TestViewPlansForPodsOfLeavingNodes(t *testing.T) {
	deleting := readyNode("deleting", "4", "8Gi")
	now := metav1.NewTime(time.Unix(100, 0))
	deleting.DeletionTimestamp = &now
	disrupted := readyNode("disrupted", "4", "8Gi")
	disrupted.Spec.Taints = []corev1.Taint{karpv1.DisruptedNoScheduleTaint}
	staying := readyNode("staying", "4", "8Gi")
	controller := true
	ds := newPod("ds", "100m", "64Mi", onNodeNamed("deleting"))
	ds.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: &controller}}
	c := &Cluster{
		Nodes: []*corev1.Node{deleting, disrupted, staying},
		Pods: []*corev1.Pod{
			newPod("a", "1", "1Gi", onNodeNamed("deleting")),
			newPod("b", "1", "1Gi", onNodeNamed("disrupted")),
			newPod("tolerant", "1", "1Gi", onNodeNamed("deleting"), tolerates(karpv1.DisruptedTaintKey)),
			ds,
			newPod("c", "1", "1Gi", onNodeNamed("staying")),
			newPod("assumed", "1", "1Gi"),
		},
		Assumed: map[types.UID]string{"uid-assumed": "staying"},
	}
	v := c.View(nil)
	var names []string
	for _, n := range v.Nodes {
		names = append(names, n.Name)
	}
	if len(names) != 1 || names[0] != "staying" {
		t.Fatalf("view nodes %v; want only the staying node", names)
	}
	got := map[string]bool{}
	for _, p := range v.Reschedulable {
		got[p.Name] = true
		if p.Spec.NodeName != "" {
			t.Errorf("reschedulable pod %s is still bound to %s; the planner must see it unbound", p.Name, p.Spec.NodeName)
		}
	}
	if len(got) != 2 || !got["a"] || !got["b"] {
		t.Fatalf("reschedulable %v; want a and b", got)
	}
	onStaying := 0
	for _, p := range v.Pods {
		if p.Spec.NodeName == "staying" {
			onStaying++
		}
	}
	if onStaying != 2 || !v.Counted["uid-assumed"] {
		t.Fatalf("%d pods counted on the staying node (assumed counted: %v); want c and the assumed pod", onStaying, v.Counted["uid-assumed"])
	}
}
