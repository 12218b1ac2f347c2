package disruption

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// Changing a NodePool's requirements drifts all its nodes; under budgets [{nodes: "1"}] they are
// replaced one at a time, each replacement running before its old node is drained.
func TestRequirementsChangeRollsNodesOneAtATime(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("default", karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: "In", Values: []string{karpv1.CapacityTypeOnDemand}})
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
	e.CreateNodePool(np)
	d := env.DeploymentOf("web", 3, "100m", "128Mi")
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=web", 3, 2*time.Minute)
	old := map[string]bool{}
	for _, p := range pods {
		old[p.Spec.NodeName] = true
	}
	if len(old) != 3 {
		t.Fatalf("want the 3 pods on 3 nodes, have %v", old)
	}

	budget := e.Sample(50*time.Millisecond, func() string {
		if n, names := e.Disrupting("default"); n > 1 {
			return fmt.Sprintf("%d nodes disrupting at once (budget 1):%s", n, names)
		}
		return ""
	})
	e.EditNodePool("default", func(np *karpv1.NodePool) {
		for i, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == karpv1.CapacityTypeLabelKey {
				np.Spec.Template.Spec.Requirements[i].Values = []string{karpv1.CapacityTypeSpot}
			}
		}
	})
	e.WaitFor("every node replaced by a spot node", 4*time.Minute, func() (bool, string) {
		nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		left, spot := 0, 0
		for _, n := range nodes.Items {
			if old[n.Name] {
				left++
			} else if n.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
				spot++
			}
		}
		ready := e.ReadyPods("app=web")
		return left == 0 && spot == 3 && ready == 3, fmt.Sprintf("%d old nodes left, %d spot nodes, %d ready pods", left, spot, ready)
	})
	budget.Stop(e, "the disruption budget")
	if evs := e.EventsFor("DisruptionTerminating", "Node"); len(evs) < 3 {
		t.Fatalf("want a DisruptionTerminating Event per drifted node, have %v", env.Notes(evs))
	}
}

// A budget window with nodes "0" blocks consolidation while it is open, and only then: moving
// Tailor's clock past the window lets the empty node go.
func TestBudgetWindowBlocksConsolidationInsideItOnly(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	hour := e.Clock.Now().UTC().Hour()
	e.CreateNodePool(env.ConsolidatingPool("default", karpv1.Budget{Nodes: "0", Schedule: ptr.To(fmt.Sprintf("0 %d * * *", hour)),
		Duration: &metav1.Duration{Duration: 2 * time.Hour}}))
	node := emptyNode(e, "web")
	claim := e.ClaimOfNode(node)
	e.WaitFor("the empty node to be Consolidatable", 30*time.Second, func() (bool, string) {
		c, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Get(e.Ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return c.IsTrue(karpv1.ConditionTypeConsolidatable), fmt.Sprintf("%+v", c.GetCondition(karpv1.ConditionTypeConsolidatable))
	})
	// Several passes (the e2e poll is 1 s) inside the window: the node stays, untainted.
	expectNodeKept(e, node.Name, 5*time.Second)

	e.Clock.Step(3 * time.Hour)
	e.WaitNodeGone(node.Name, time.Minute)
}

// A replacement that fails to launch leaves the old node untainted and kept, with a
// DisruptionFailed Event; the next decision, with capacity back, replaces it.
func TestFailedReplacementKeepsTheNode(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(onDemand(env.ConsolidatingPool("default")))
	node := oversizedNode(e)
	e.Cloud.InjectFault(fake.StepCreate, fake.Fault{Err: fmt.Errorf("injected: the replacement does not launch")})
	e.WaitFor("a DisruptionFailed Event on node "+node, 2*time.Minute, func() (bool, string) {
		evs := e.EventsFor("DisruptionFailed", "Node")
		return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool { return ev.Regarding.Name == node }), fmt.Sprint(env.Notes(evs))
	})
	e.WaitFor("node "+node+" untainted", 30*time.Second, func() (bool, string) {
		n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !nodetaint.IsDisrupted(n) && n.DeletionTimestamp == nil, fmt.Sprintf("taints %v", n.Spec.Taints)
	})
	if pods := e.WaitRunning("app=small", 1, time.Minute); pods[0].Spec.NodeName != node {
		t.Fatalf("the pod left its node %s for %s though the replacement failed", node, pods[0].Spec.NodeName)
	}
	e.WaitNodeGone(node, 2*time.Minute)
	e.WaitRunning("app=small", 1, time.Minute)
}

// onDemand limits the pool to on-demand capacity: replacing a spot node takes 15 cheaper spot
// types (spotToSpotMinInstanceTypes), which a node this small does not have in the fake catalog.
func onDemand(np *karpv1.NodePool) *karpv1.NodePool {
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
		Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}})
	return np
}

// oversizedNode leaves one small pod (app=small) alone on a node sized for a big one, which
// consolidation would replace with a cheaper node, and returns that node's name.
func oversizedNode(e *env.Env, smallAnnotations ...string) string {
	e.T.Helper()
	big, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("big", 1, "3", "1Gi"), metav1.CreateOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	node := e.WaitRunning("app=big", 1, 2*time.Minute)[0].Spec.NodeName
	small := env.DeploymentOf("small", 1, "100m", "128Mi")
	if len(smallAnnotations) == 2 {
		small.Spec.Template.Annotations = map[string]string{smallAnnotations[0]: smallAnnotations[1]}
	}
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, small, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
	if pod := e.WaitRunning("app=small", 1, time.Minute)[0]; pod.Spec.NodeName != node {
		e.T.Fatalf("the small pod went to %s, not beside the big one on %s", pod.Spec.NodeName, node)
	}
	e.Scale(big, 0)
	e.WaitFor("the big pod to be gone", time.Minute, func() (bool, string) {
		n := len(e.PodNames("app=big"))
		return n == 0, fmt.Sprintf("%d big pods", n)
	})
	return node
}

// A pod annotated karpenter.sh/do-not-disrupt keeps its node, which consolidation would otherwise
// replace with a cheaper one, and DisruptionBlocked says why; once the annotation is gone, it does.
func TestDoNotDisruptPodKeepsItsNode(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(onDemand(env.ConsolidatingPool("default")))
	node := oversizedNode(e, karpv1.DoNotDisruptAnnotationKey, "true")
	expectNodeKept(e, node, 6*time.Second)
	// The loop says why, as Karpenter does: DisruptionBlocked on the Node, naming the annotation.
	e.WaitFor("a DisruptionBlocked Event on node "+node, 10*time.Second, func() (bool, string) {
		evs := env.EventsOn(e.EventsFor("DisruptionBlocked", "Node"), node)
		return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool {
			return strings.Contains(ev.Note, karpv1.DoNotDisruptAnnotationKey)
		}), fmt.Sprint(env.Notes(evs))
	})

	pod := e.WaitRunning("app=small", 1, time.Minute)[0]
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, karpv1.DoNotDisruptAnnotationKey)
	if _, err := e.Cluster.Kube.CoreV1().Pods("default").Patch(e.Ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitNodeGone(node, 2*time.Minute)
	e.WaitRunning("app=small", 1, time.Minute)
}

// emptyNode launches a node for a one-pod Deployment, then scales it to zero, and returns the
// now empty node.
func emptyNode(e *env.Env, app string) *corev1.Node {
	e.T.Helper()
	d, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf(app, 1, "100m", "128Mi"), metav1.CreateOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	pod := e.WaitRunning("app="+app, 1, 2*time.Minute)[0]
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	e.Scale(d, 0)
	e.WaitFor("the pods of "+app+" to be gone", time.Minute, func() (bool, string) {
		n := len(e.PodNames("app=" + app))
		return n == 0, fmt.Sprintf("%d pods", n)
	})
	return node
}

// expectNodeKept fails the test if the node is tainted, deleted or gone at any point within d.
func expectNodeKept(e *env.Env, name string, d time.Duration) {
	e.T.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			e.T.Fatalf("node %s was removed", name)
		}
		if err == nil && (nodetaint.IsDisrupted(n) || n.DeletionTimestamp != nil) {
			e.T.Fatalf("node %s is being disrupted: %v", name, n.Spec.Taints)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
