package aws

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// shapeLabel is the template label every case's NodePools put on their nodes, and which the
// case's workloads select, so that cases running side by side never share nodes.
const shapeLabel = "tailor-shapes/case"

// shapeState is a reading of one case: its pods (by namespace, named after the case), its nodes
// and NodeClaims (by shapeLabel) and its EC2NodeClass (named after the case).
type shapeState struct {
	name   string
	pods   []corev1.Pod
	nodes  map[string]corev1.Node
	claims []karpv1.NodeClaim
	class  *awsv1.EC2NodeClass
}

func readShape(e *env.AWS, name string) (*shapeState, error) {
	s := &shapeState{name: name, nodes: map[string]corev1.Node{}}
	pods, err := e.Cluster.Kube.CoreV1().Pods(name).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s.pods = pods.Items
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{LabelSelector: shapeLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		s.nodes[n.Name] = n
	}
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{LabelSelector: shapeLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	s.claims = claims.Items
	if s.class, err = e.Cluster.Tailor.AWSV1().EC2NodeClasses().Get(e.Ctx, name, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	return s, nil
}

// waitShape is env.Env.WaitFor for a subtest: it fails the case, not the whole table.
func waitShape(t *testing.T, e *env.AWS, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(e.Ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last state: %s", what, err, last)
	}
}

// stuck describes a pod of the case that does not run yet, to say why a case has not settled.
func (s *shapeState) stuck() string {
	for _, p := range s.pods {
		if _, ok := s.nodes[p.Spec.NodeName]; ok && p.Status.Phase == corev1.PodRunning {
			continue
		}
		why := ""
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				why = c.Reason + ": " + c.Message
			}
		}
		return fmt.Sprintf("; pod %s is %s on node %q (nominated %q) %s", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.NominatedNodeName, why)
	}
	return ""
}

// running counts the pods Running on a node of the case.
func (s *shapeState) running() int {
	n := 0
	for _, p := range s.pods {
		if _, ok := s.nodes[p.Spec.NodeName]; ok && p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

// settled: every claim of the case has its node, and the pods are as many as the workloads
// ask for. Waiting for the claims keeps a check from reading a fleet still on its way.
func (s *shapeState) settled(pods int) (bool, string) {
	for _, c := range s.claims {
		if cond := c.GetCondition(karpv1.ConditionTypeInitialized); cond == nil || cond.Status != metav1.ConditionTrue {
			return false, fmt.Sprintf("NodeClaim %s not initialized", c.Name)
		}
	}
	return len(s.pods) == pods, fmt.Sprintf("%d of %d pods, %d running, %d claims", len(s.pods), pods, s.running(), len(s.claims))
}

// nodeOf is the node the pod runs on.
func (s *shapeState) nodeOf(p corev1.Pod) corev1.Node { return s.nodes[p.Spec.NodeName] }

// launchedFor says whether Tailor launched the NodeClaim of pod p's node for p: the provisioner
// tells every pod of a claim it creates so, with a Nominated event that names the claim. A claim
// created for other pods (the plan may count p on the room it has left, as the scheduler may bind
// p there by its own scores) was not launched for p.
func (s *shapeState) launchedFor(e *env.AWS, p corev1.Pod) (bool, error) {
	claim := ""
	for _, c := range s.claims {
		if c.Status.NodeName == p.Spec.NodeName {
			claim = c.Name
		}
	}
	if claim == "" {
		return false, fmt.Errorf("pod %s runs on node %s, which no NodeClaim of the case has", p.Name, p.Spec.NodeName)
	}
	events, err := e.Cluster.Kube.EventsV1().Events(p.Namespace).List(e.Ctx, metav1.ListOptions{FieldSelector: "reason=Nominated"})
	if err != nil {
		return false, err
	}
	for _, ev := range events.Items {
		if ev.Regarding.UID == p.UID && strings.HasSuffix(ev.Note, "nodeclaim/"+claim) {
			return true, nil
		}
	}
	return false, nil
}

// toldUnplaceable counts the case's pods that are not running and have a FailedProvisioning
// event: the provisioner has planned them and found no room.
func (s *shapeState) toldUnplaceable(e *env.AWS) (int, error) {
	events, err := e.Cluster.Kube.EventsV1().Events(s.name).List(e.Ctx, metav1.ListOptions{FieldSelector: "reason=FailedProvisioning"})
	if err != nil {
		return 0, err
	}
	told := map[string]bool{}
	for _, ev := range events.Items {
		told[string(ev.Regarding.UID)] = true
	}
	n := 0
	for _, p := range s.pods {
		if p.Status.Phase != corev1.PodRunning && told[string(p.UID)] {
			n++
		}
	}
	return n, nil
}

// podsOf are the case's pods of one workload (label app).
func (s *shapeState) podsOf(app string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range s.pods {
		if p.Labels["app"] == app {
			out = append(out, p)
		}
	}
	return out
}

// eachNode fails the test for every node of the case on which ok does not hold.
func (s *shapeState) eachNode(t *testing.T, what string, ok func(corev1.Node) bool) {
	t.Helper()
	if len(s.nodes) == 0 {
		t.Errorf("%s: the case has no nodes", what)
	}
	for _, n := range s.nodes {
		if !ok(n) {
			t.Errorf("node %s (%s) is not %s: labels %v", n.Name, n.Labels[corev1.LabelInstanceTypeStable], what, n.Labels)
		}
	}
}

func labelInt(n corev1.Node, key string) int {
	v, err := strconv.Atoi(n.Labels[key])
	if err != nil {
		return -1
	}
	return v
}

// counts tallies the case's pods by a label of their nodes; zero for every value in domains.
func (s *shapeState) counts(key string, domains ...string) map[string]int {
	out := map[string]int{}
	for _, d := range domains {
		out[d] = 0
	}
	for _, p := range s.pods {
		out[s.nodeOf(p).Labels[key]]++
	}
	return out
}

// skew is the largest difference between two counts.
func skew(counts map[string]int) int {
	lo, hi := -1, 0
	for _, c := range counts {
		if lo < 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	return hi - max(lo, 0)
}

// claimValues are the values a claim's requirement on key allows, and its minValues.
func claimValues(c *karpv1.NodeClaim, key string) ([]string, int) {
	for _, r := range c.Spec.Requirements {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn {
			return r.Values, ptrValue(r.MinValues)
		}
	}
	return nil, 0
}

func ptrValue(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// distinct counts the different prefixes (before sep) of names: families of instance types.
func distinct(names []string, cut func(string) string) int {
	var seen []string
	for _, n := range names {
		if k := cut(n); !slices.Contains(seen, k) {
			seen = append(seen, k)
		}
	}
	return len(seen)
}

func familyOf(instanceType string) string { f, _, _ := strings.Cut(instanceType, "."); return f }

// classAMIs are the IDs of the images the class resolved, with their names.
func classAMIs(nc *awsv1.EC2NodeClass) map[string]string {
	out := map[string]string{}
	for _, a := range nc.Status.AMIs {
		out[a.ID] = a.Name
	}
	return out
}
