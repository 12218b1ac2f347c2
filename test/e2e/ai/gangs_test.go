package ai

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestGangLaunchesWholeOrNothing: with gang scheduling on, a 16-pod gang of one GPU each, on a
// NodePool of one-GPU nodes whose limit allows 15, launches nothing and its PodGroup says why;
// once the limit allows 16, Tailor launches 16 nodes, and the scheduler binds no pod of the
// gang before all 16 nodes are up to take them.
func TestGangLaunchesWholeOrNothing(t *testing.T) {
	e := env.Start(t, nil, nil, func(o *sandbox.Options) { o.FeatureGates = sandbox.GangGates })
	np := env.NodePool("gpu", karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable,
		Operator: corev1.NodeSelectorOpIn, Values: []string{"g4dn.xlarge"}})
	np.Spec.Limits = karpv1.Limits{fake.ResourceNvidiaGPU: resource.MustParse("15")}
	e.CreateNodePool(np)

	group := &schedulingv1alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train"},
		Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: 16}}}}
	if _, err := e.Cluster.Kube.SchedulingV1alpha2().PodGroups("default").Create(e.Ctx, group, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup train: %v", err)
	}
	for i := range 16 {
		spec := env.PodSpec("500m", "1Gi")
		spec.Containers[0].Resources.Requests[fake.ResourceNvidiaGPU] = resource.MustParse("1")
		spec.Containers[0].Resources.Limits = corev1.ResourceList{fake.ResourceNvidiaGPU: resource.MustParse("1")}
		spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
		spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train")}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("train-%02d", i),
			Labels: map[string]string{"app": "train"}}, Spec: spec}
		created, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
		if created.Spec.SchedulingGroup == nil {
			t.Fatal("the API server dropped spec.schedulingGroup: the GenericWorkload gate is off")
		}
	}

	e.WaitFor("the PodGroup told why nothing launched", 2*time.Minute, func() (bool, string) {
		for _, ev := range e.EventsFor("FailedProvisioning", "PodGroup") {
			if strings.Contains(ev.Note, "needs at least 16 pods") {
				return true, ev.Note
			}
		}
		return false, "no FailedProvisioning Event on PodGroup default/train"
	})
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 0 {
		t.Fatalf("%d NodeClaims launched for a gang that cannot complete: %s", len(claims.Items), env.ClaimSummary(claims.Items))
	}

	e.EditNodePool("gpu", func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{fake.ResourceNvidiaGPU: resource.MustParse("16")}
	})
	// The first time any pod of the gang is seen bound, every one of the 16 nodes must be Ready:
	// the gang's pods are held at Permit until all 16 have a place.
	firstBound := ""
	e.WaitFor("16 pods of the gang Running", 4*time.Minute, func() (bool, string) {
		pods, err := e.Cluster.Kube.CoreV1().Pods("default").List(e.Ctx, metav1.ListOptions{LabelSelector: "app=train"})
		if err != nil {
			return false, err.Error()
		}
		bound, running := 0, 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if bound > 0 && firstBound == "" {
			firstBound = fmt.Sprintf("%d pods bound with %d nodes Ready", bound, readyNodes(e))
		}
		return running == 16, fmt.Sprintf("%d bound, %d running", bound, running)
	})
	if !strings.HasSuffix(firstBound, "with 16 nodes Ready") {
		t.Errorf("the gang began binding before all of its capacity was up: %s", firstBound)
	}
}

// readyNodes counts the nodes whose Ready condition is True.
func readyNodes(e *env.Env) int {
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	n := 0
	for _, node := range nodes.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}
