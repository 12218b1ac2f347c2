package provisioning

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/nodepool/counter"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// A 10-replica Deployment of 1 CPU / 1 GiB pods goes from Pending to Running on nodes that Tailor
// launched, starting from a cluster with no nodes at all (so the scheduler never calls PostFilter
// for the first pods).
func TestDeploymentScalesUpFromZeroNodes(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("web", 10, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=web", 10, 2*time.Minute)

	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.Node{}
	for _, n := range nodes.Items {
		byName[n.Name] = n
	}
	for _, p := range pods {
		n, ok := byName[p.Spec.NodeName]
		if !ok {
			t.Fatalf("pod %s is on %s, which is not a node", p.Name, p.Spec.NodeName)
		}
		if n.Labels[karpv1.NodePoolLabelKey] != "default" {
			t.Errorf("pod %s runs on node %s, which NodePool default did not launch (labels %v)", p.Name, n.Name, n.Labels)
		}
	}
	list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims := list.Items
	if len(claims) == 0 || len(claims) != len(nodes.Items) {
		t.Fatalf("%d NodeClaims for %d nodes; want one per node", len(claims), len(nodes.Items))
	}
	instances := e.Cloud.Instances()
	if len(instances) != len(claims) {
		t.Fatalf("%d instances in the cloud for %d NodeClaims", len(instances), len(claims))
	}
	for _, c := range claims {
		for _, cond := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
			if !c.IsTrue(cond) {
				t.Errorf("NodeClaim %s: condition %s is not True: %+v", c.Name, cond, c.GetCondition(cond))
			}
		}
	}
	for _, n := range nodes.Items {
		for _, taint := range n.Spec.Taints {
			if taint.Key == karpv1.UnregisteredTaintKey {
				t.Errorf("node %s still has taint %s", n.Name, taint.Key)
			}
		}
	}
	// kubectl get nodepools reads the Nodes, CPU and Memory columns from status.resources.
	want := counter.Count(ptrs(claims))
	e.WaitFor("NodePool default's status.resources to count its NodeClaims", 30*time.Second, func() (bool, string) {
		np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := np.Status.Resources
		nodes, cpu := got[counter.ResourceNodes], got[corev1.ResourceCPU]
		return nodes.Cmp(want[counter.ResourceNodes]) == 0 && cpu.Cmp(want[corev1.ResourceCPU]) == 0 && !got.Memory().IsZero(),
			fmt.Sprintf("status.resources %v, want %v", got, want)
	})
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// A pod that no NodePool can hold stays Pending, and gets an Event per NodePool that says why.
func TestUnplaceablePodIsExplainedPerNodePool(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(env.NodePool("amd", karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}))
	tainted := env.NodePool("tainted")
	tainted.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	e.CreateNodePool(tainted)

	huge := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: "default"}, Spec: env.PodSpec("500", "1Gi")}
	if _, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, huge, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	events := map[string]string{}
	e.WaitFor("an event per NodePool", time.Minute, func() (bool, string) {
		list, err := e.Cluster.Kube.EventsV1().Events("default").List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var notes []string
		for _, ev := range list.Items {
			if ev.Regarding.Name != "huge" || ev.Reason != "FailedProvisioning" {
				continue
			}
			notes = append(notes, ev.Note)
			for _, pool := range []string{"amd", "tainted"} {
				if strings.Contains(ev.Note, fmt.Sprintf("NodePool %q", pool)) {
					events[pool] = ev.Note
				}
			}
		}
		return len(events) == 2, strings.Join(notes, " | ")
	})
	if note := events["amd"]; !strings.Contains(note, "Insufficient cpu") || !strings.Contains(note, "largest instance type") {
		t.Errorf("NodePool amd's event does not say the pod is too big and name the largest instance type: %q", note)
	}
	if note := events["tainted"]; !strings.Contains(note, "untolerated taint") || !strings.Contains(note, "dedicated") {
		t.Errorf("NodePool tainted's event does not name the taint the pod does not tolerate: %q", note)
	}
	pod, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, "huge", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending {
		t.Fatalf("pod huge is %s on %q; want Pending and unbound", pod.Status.Phase, pod.Spec.NodeName)
	}
	if n := len(e.Cloud.Instances()); n != 0 {
		t.Fatalf("%d instances launched for a pod nothing can hold", n)
	}
}

// With nodes already in the cluster the scheduler reaches Tailor's PostFilter: a second
// Deployment that does not fit on the first one's node gets capacity of its own, and the first
// node keeps its pods.
func TestScaleUpBesideExistingNodes(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("first", 2, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := e.WaitRunning("app=first", 2, 2*time.Minute)
	before := len(e.Cloud.Instances())
	if before == 0 {
		t.Fatal("no instance launched for the first Deployment")
	}
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("second", 10, "2", "4Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=second", 10, 2*time.Minute)
	if after := len(e.Cloud.Instances()); after <= before {
		t.Fatalf("%d instances after the second Deployment, %d before; want more", after, before)
	}
	for _, p := range first {
		got, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, p.Name, metav1.GetOptions{})
		if err != nil || got.Spec.NodeName != p.Spec.NodeName {
			t.Fatalf("pod %s moved or went away: %v", p.Name, err)
		}
	}
}

// Once a launching node's name is known, the pods planned onto it are nominated to it
// (status.nominatedNodeName, KEP-5278), before the node exists; they then bind to it.
func TestPlannedPodsAreNominatedToTheLaunchingNode(t *testing.T) {
	release := make(chan struct{})
	e := env.NewWithJoiner(t, func(joiner fake.Joiner) fake.Joiner {
		return env.JoinerFunc(func(ctx context.Context, inst fake.Instance) error {
			select { // the kubelet comes up only once the test has seen the nomination
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			return joiner.Join(ctx, inst)
		})
	})
	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nominee", Namespace: "default"}, Spec: env.PodSpec("1", "1Gi")}
	if _, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var nominated string
	e.WaitFor("the pod to be nominated to the launching node", time.Minute, func() (bool, string) {
		p, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, "nominee", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		nominated = p.Status.NominatedNodeName
		return nominated != "", "not nominated"
	})
	if _, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, nominated, metav1.GetOptions{}); err == nil {
		t.Fatalf("node %s already exists; the nomination should come before it", nominated)
	}
	close(release)
	e.WaitFor("the pod to bind to its nominated node", time.Minute, func() (bool, string) {
		p, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, "nominee", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == nominated, "on " + p.Spec.NodeName
	})
}
