package ai

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestDRADriverServesAnExistingGPUNode: a GPU node no NodePool launched (one the cluster had
// before Tailor) registers; the stand-in DRA driver publishes its four GPUs as the type's
// devices. A pod whose claim comes from a ResourceClaimTemplate (made by the resourceclaim
// controller) and a pod with a claim of its own both land there, each with one GPU allocated by
// the scheduler's DynamicResources plugin and reserved for it; no node is launched. When the node
// goes, so do its slices.
func TestDRADriverServesAnExistingGPUNode(t *testing.T) {
	e := env.NewAWS(t)
	newDRAEnv(e, false)
	node := existingNode("gpu-existing", "g5.12xlarge", corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("48"), corev1.ResourceMemory: resource.MustParse("192Gi"), corev1.ResourcePods: resource.MustParse("234")})
	if _, err := e.Cluster.Kube.CoreV1().Nodes().Create(e.Ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the node's GPUs published", 30*time.Second, func() (bool, string) {
		s, err := gpuSlice(e.Env, node.Name)
		if err != nil {
			return false, err.Error()
		}
		product := s.Spec.Devices[0].Attributes["productName"].StringValue
		if len(s.Spec.Devices) != 4 || product == nil || *product != "NVIDIA A10G" || s.Spec.Pool.Name != node.Name {
			return false, fmt.Sprintf("slice %s: pool %s, %d devices, product %v", s.Name, s.Spec.Pool.Name, len(s.Spec.Devices), product)
		}
		return true, ""
	})

	create(e.Env, claimTemplate("one-gpu", gpuRequest("gpu", 1)))
	create(e.Env, claimOf("own-gpu", gpuRequest("gpu", 1)))
	create(e.Env, gpuDeployment("from-template", 1, corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}))
	create(e.Env, gpuDeployment("own-claim", 1, corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("own-gpu")}))
	seen := map[string]string{}
	for _, app := range []string{"from-template", "own-claim"} {
		pods, claims := waitClaimsAllocated(e.Env, "app="+app, "gpu", 1, 1, time.Minute)
		if pods[0].Spec.NodeName != node.Name {
			t.Fatalf("pod %s runs on %s, not on the GPU node", pods[0].Name, pods[0].Spec.NodeName)
		}
		dev := claims[0].Status.Allocation.Devices.Results[0].Device
		if other, ok := seen[dev]; ok {
			t.Fatalf("%s and %s were both given GPU %s", other, app, dev)
		}
		seen[dev] = app
	}
	if nc, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{}); err != nil || len(nc.Items) != 0 {
		t.Fatalf("NodeClaims %v (%v), want none: the pods fit the existing node", nc, err)
	}

	expectSlicesKept(e.Env, node.Name)

	if err := e.Cluster.Kube.CoreV1().Nodes().Delete(e.Ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the node's slices deleted with it", 30*time.Second, func() (bool, string) {
		s, err := gpuSlice(e.Env, node.Name)
		if err == nil {
			return false, "slice " + s.Name + " remains"
		}
		return true, ""
	})
}

// existingNode is a Node of the type as a kubelet registers it, outside any NodePool, played by
// kwok.
func existingNode(name, instanceType string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{fake.KwokNodeAnnotation: "fake"},
			Labels: map[string]string{corev1.LabelInstanceTypeStable: instanceType, corev1.LabelHostname: name,
				corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", corev1.LabelTopologyZone: "us-west-2a"}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// expectSlicesKept: the driver rewrites no slice when nothing changed (the node's status updates
// leave its EFA slice as it was), and puts back one deleted behind its back.
func expectSlicesKept(e *env.Env, node string) {
	e.T.Helper()
	kube := e.Cluster.Kube
	efa := func() *resourcev1.ResourceSlice {
		list, err := kube.ResourceV1().ResourceSlices().List(e.Ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			e.T.Fatal(err)
		}
		for i := range list.Items {
			if list.Items[i].Spec.Driver == tailoraws.DriverEFA {
				return &list.Items[i]
			}
		}
		e.T.Fatalf("node %s has no EFA slice", node)
		return nil
	}
	before := efa()
	gpu, err := gpuSlice(e, node)
	if err != nil {
		e.T.Fatal(err)
	}
	if err := kube.ResourceV1().ResourceSlices().Delete(e.Ctx, gpu.Name, metav1.DeleteOptions{}); err != nil {
		e.T.Fatal(err)
	}
	e.WaitFor("the deleted GPU slice published again", 30*time.Second, func() (bool, string) {
		again, err := gpuSlice(e, node)
		if err != nil {
			return false, err.Error()
		}
		return again.UID != gpu.UID, "the old slice is still there"
	})
	if after := efa(); after.ResourceVersion != before.ResourceVersion || after.Generation != 1 {
		e.T.Fatalf("the EFA slice was rewritten (resource version %s, then %s; generation %d)", before.ResourceVersion, after.ResourceVersion, after.Generation)
	}
}
