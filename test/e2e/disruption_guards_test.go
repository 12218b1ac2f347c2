package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
)

// Changing a NodePool's requirements drifts all its nodes; under budgets [{nodes: "1"}] they are
// replaced one at a time, each replacement running before its old node is drained.
func TestRequirementsChangeRollsNodesOneAtATime(t *testing.T) {
	e := newEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	np := nodePool("default", karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: "In", Values: []string{karpv1.CapacityTypeOnDemand}})
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
	e.createNodePool(np)
	d := deploymentOf("web", 3, "100m", "128Mi")
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.waitRunning("app=web", 3, 2*time.Minute)
	old := map[string]bool{}
	for _, p := range pods {
		old[p.Spec.NodeName] = true
	}
	if len(old) != 3 {
		t.Fatalf("want the 3 pods on 3 nodes, have %v", old)
	}

	budget := e.sample(50*time.Millisecond, func() string {
		if n, names := e.disrupting("default"); n > 1 {
			return fmt.Sprintf("%d nodes disrupting at once (budget 1):%s", n, names)
		}
		return ""
	})
	e.editNodePool("default", func(np *karpv1.NodePool) {
		for i, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == karpv1.CapacityTypeLabelKey {
				np.Spec.Template.Spec.Requirements[i].Values = []string{karpv1.CapacityTypeSpot}
			}
		}
	})
	e.waitFor("every node replaced by a spot node", 4*time.Minute, func() (bool, string) {
		nodes, err := e.cluster.Kube.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
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
		ready := e.readyPods("app=web")
		return left == 0 && spot == 3 && ready == 3, fmt.Sprintf("%d old nodes left, %d spot nodes, %d ready pods", left, spot, ready)
	})
	budget.Stop(e, "the disruption budget")
	if evs := e.eventsFor("DisruptionTerminating", "Node"); len(evs) < 3 {
		t.Fatalf("want a DisruptionTerminating Event per drifted node, have %v", notes(evs))
	}
}

// A budget window with nodes "0" blocks consolidation while it is open, and only then: moving
// Tailor's clock past the window lets the empty node go.
func TestBudgetWindowBlocksConsolidationInsideItOnly(t *testing.T) {
	e := newEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	hour := e.clock.Now().UTC().Hour()
	e.createNodePool(consolidatingPool("default", karpv1.Budget{Nodes: "0", Schedule: ptr.To(fmt.Sprintf("0 %d * * *", hour)),
		Duration: &metav1.Duration{Duration: 2 * time.Hour}}))
	node := e.emptyNode("web")
	claim := e.claimOfNode(node)
	e.waitFor("the empty node to be Consolidatable", 30*time.Second, func() (bool, string) {
		c, err := e.cluster.Tailor.KarpenterV1().NodeClaims().Get(e.ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return c.IsTrue(karpv1.ConditionTypeConsolidatable), fmt.Sprintf("%+v", c.GetCondition(karpv1.ConditionTypeConsolidatable))
	})
	// Several passes (the e2e poll is 1 s) inside the window: the node stays, untainted.
	e.expectNodeKept(node.Name, 5*time.Second)

	e.clock.Step(3 * time.Hour)
	e.waitNodeGone(node.Name, time.Minute)
}

// A replacement that fails to launch leaves the old node untainted and kept, with a
// DisruptionFailed Event; the next decision, with capacity back, replaces it.
func TestFailedReplacementKeepsTheNode(t *testing.T) {
	e := newEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	e.createNodePool(onDemand(consolidatingPool("default")))
	node := e.oversizedNode()
	e.cloud.InjectFault(fake.StepCreate, fake.Fault{Err: fmt.Errorf("injected: the replacement does not launch")})
	e.waitFor("a DisruptionFailed Event on node "+node, 2*time.Minute, func() (bool, string) {
		evs := e.eventsFor("DisruptionFailed", "Node")
		return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool { return ev.Regarding.Name == node }), fmt.Sprint(notes(evs))
	})
	e.waitFor("node "+node+" untainted", 30*time.Second, func() (bool, string) {
		n, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !nodetaint.IsDisrupted(n) && n.DeletionTimestamp == nil, fmt.Sprintf("taints %v", n.Spec.Taints)
	})
	if pods := e.waitRunning("app=small", 1, time.Minute); pods[0].Spec.NodeName != node {
		t.Fatalf("the pod left its node %s for %s though the replacement failed", node, pods[0].Spec.NodeName)
	}
	e.waitNodeGone(node, 2*time.Minute)
	e.waitRunning("app=small", 1, time.Minute)
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
func (e *env) oversizedNode(smallAnnotations ...string) string {
	e.t.Helper()
	big, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf("big", 1, "3", "1Gi"), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	node := e.waitRunning("app=big", 1, 2*time.Minute)[0].Spec.NodeName
	small := deploymentOf("small", 1, "100m", "128Mi")
	if len(smallAnnotations) == 2 {
		small.Spec.Template.Annotations = map[string]string{smallAnnotations[0]: smallAnnotations[1]}
	}
	if _, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, small, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if pod := e.waitRunning("app=small", 1, time.Minute)[0]; pod.Spec.NodeName != node {
		e.t.Fatalf("the small pod went to %s, not beside the big one on %s", pod.Spec.NodeName, node)
	}
	e.scale(big, 0)
	e.waitFor("the big pod to be gone", time.Minute, func() (bool, string) {
		n := len(e.podNames("app=big"))
		return n == 0, fmt.Sprintf("%d big pods", n)
	})
	return node
}

// A pod annotated karpenter.sh/do-not-disrupt keeps its node, which consolidation would otherwise
// replace with a cheaper one, and DisruptionBlocked says why; once the annotation is gone, it does.
func TestDoNotDisruptPodKeepsItsNode(t *testing.T) {
	e := newEnv(t)
	e.applyExample("ec2nodeclass.yaml")
	e.createNodePool(onDemand(consolidatingPool("default")))
	node := e.oversizedNode(karpv1.DoNotDisruptAnnotationKey, "true")
	e.expectNodeKept(node, 6*time.Second)
	// The loop says why, as Karpenter does: DisruptionBlocked on the Node, naming the annotation.
	e.waitFor("a DisruptionBlocked Event on node "+node, 10*time.Second, func() (bool, string) {
		evs := eventsOn(e.eventsFor("DisruptionBlocked", "Node"), node)
		return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool {
			return strings.Contains(ev.Note, karpv1.DoNotDisruptAnnotationKey)
		}), fmt.Sprint(notes(evs))
	})

	pod := e.waitRunning("app=small", 1, time.Minute)[0]
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, karpv1.DoNotDisruptAnnotationKey)
	if _, err := e.cluster.Kube.CoreV1().Pods("default").Patch(e.ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitNodeGone(node, 2*time.Minute)
	e.waitRunning("app=small", 1, time.Minute)
}

// emptyNode launches a node for a one-pod Deployment, then scales it to zero, and returns the
// now empty node.
func (e *env) emptyNode(app string) *corev1.Node {
	e.t.Helper()
	d, err := e.cluster.Kube.AppsV1().Deployments("default").Create(e.ctx, deploymentOf(app, 1, "100m", "128Mi"), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pod := e.waitRunning("app="+app, 1, 2*time.Minute)[0]
	node, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.scale(d, 0)
	e.waitFor("the pods of "+app+" to be gone", time.Minute, func() (bool, string) {
		n := len(e.podNames("app=" + app))
		return n == 0, fmt.Sprintf("%d pods", n)
	})
	return node
}

func (e *env) scale(d *appsv1.Deployment, replicas int32) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.cluster.Kube.AppsV1().Deployments(d.Namespace).Patch(e.ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// expectNodeKept fails the test if the node is tainted, deleted or gone at any point within d.
func (e *env) expectNodeKept(name string, d time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		n, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			e.t.Fatalf("node %s was removed", name)
		}
		if err == nil && (nodetaint.IsDisrupted(n) || n.DeletionTimestamp != nil) {
			e.t.Fatalf("node %s is being disrupted: %v", name, n.Spec.Taints)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
