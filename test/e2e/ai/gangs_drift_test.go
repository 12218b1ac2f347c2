package ai

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tailor-sh/tailor/test/e2e/env"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// TestDriftedGangIsReplacedTogether: a 3-pod gang (a Deployment whose pods join PodGroup train)
// runs on three nodes; their NodePool's template changes, so they drift. Disruption replaces the
// three in one command: replacements for all three are up before any old node is drained, and
// the gang runs again whole on the new nodes.
func TestDriftedGangIsReplacedTogether(t *testing.T) {
	e := env.Start(t, nil, nil, func(o *sandbox.Options) { o.FeatureGates = sandbox.GangGates })
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("gang", karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable,
		Operator: corev1.NodeSelectorOpIn, Values: []string{"c6g.xlarge"}})
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	e.CreateNodePool(np)
	if _, err := e.Cluster.Kube.SchedulingV1alpha2().PodGroups("default").Create(e.Ctx, gangGroup("train", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := env.DeploymentOf("train", 3, "3", "1Gi")
	d.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train")}
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=train", 3, time.Minute)
	list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, c := range list.Items {
		old[c.Name] = true
	}
	if len(old) != 3 {
		t.Fatalf("%d NodeClaims for a gang of three 3-CPU pods on 4-CPU nodes: %s", len(old), env.ClaimSummary(list.Items))
	}

	e.EditNodePool("gang", func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"team": "ml"} })
	// The first time an old NodeClaim is seen deleted, every replacement must be initialized.
	firstDrain := ""
	e.WaitFor("the gang running on three new nodes, the old ones gone", time.Minute, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		left, ready := 0, 0
		for _, c := range claims.Items {
			switch {
			case old[c.Name]:
				left++
				if c.DeletionTimestamp != nil && firstDrain == "" {
					firstDrain = "deleting"
				}
			case c.IsTrue(karpv1.ConditionTypeInitialized):
				ready++
			}
		}
		if firstDrain == "deleting" || (firstDrain == "" && left < len(old)) {
			firstDrain = fmt.Sprintf("an old NodeClaim deleted with %d replacements initialized", ready)
		}
		running := runningOn(e, "app=train", old)
		return left == 0 && running == 3, fmt.Sprintf("%d old NodeClaims left, %d replacements initialized, %d pods running on new nodes",
			left, ready, running)
	})
	if !strings.HasSuffix(firstDrain, "with 3 replacements initialized") {
		t.Errorf("the gang's nodes began draining before all replacements were up: %s", firstDrain)
	}
	var notes []string
	for _, ev := range e.EventsFor("DisruptionTerminating", "Node") {
		notes = append(notes, ev.Note)
		if !strings.Contains(ev.Note, "replacing 3 nodes") {
			t.Errorf("a node of the gang was disrupted by a command that does not take all three: %q", ev.Note)
		}
	}
	if len(notes) == 0 {
		t.Error("no DisruptionTerminating Event on the gang's nodes")
	}
}

// runningOn counts the Running pods of selector that are on a node of no NodeClaim in old.
func runningOn(e *env.Env, selector string, old map[string]bool) int {
	e.T.Helper()
	oldNodes := map[string]bool{}
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	for _, c := range claims.Items {
		if old[c.Name] {
			oldNodes[c.Status.NodeName] = true
		}
	}
	pods, err := e.Cluster.Kube.CoreV1().Pods("default").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != "" && !oldNodes[p.Spec.NodeName] {
			n++
		}
	}
	return n
}
