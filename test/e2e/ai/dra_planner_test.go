package ai

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// The tests here need Tailor's planner to simulate DynamicResources over the devices of the
// types it may launch: without it a pod's claim is ignored and its node lacks the device.

// memoryAtLeast40Gi selects the GPUs with at least 40 GiB of memory.
const memoryAtLeast40Gi = `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`

// TestDRAClaimGetsTheGPUMemoryItAsks: a Deployment whose ResourceClaimTemplate asks for one GPU
// with at least 40 GiB of memory gets a type whose GPUs have it, not the pool's cheapest GPU
// type, whose GPUs do not.
func TestDRAClaimGetsTheGPUMemoryItAsks(t *testing.T) {
	e := env.NewAWS(t)
	newDRAEnv(e, true)
	types := gpuPoolTypes(e)
	cheapest, price := cheapestGPUType(types)
	if m := gpuMemory(cheapest.Devices); m.Cmp(resource.MustParse("40Gi")) >= 0 {
		t.Fatalf("the cheapest GPU type %s already has %s GPUs: the test would not tell", cheapest.Name, m.String())
	}
	create(e.Env, claimTemplate("big-gpu", gpuRequest("gpu", 1, memoryAtLeast40Gi)))
	create(e.Env, gpuDeployment("big", 2, corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("big-gpu")}))
	pods, claims := waitClaimsAllocated(e.Env, "app=big", "gpu", 2, 1, 3*time.Minute)
	for i, p := range pods {
		it := typeOfPod(e.Env, types, p)
		if m := gpuMemory(it.Devices); it.Name == cheapest.Name || m.Cmp(resource.MustParse("40Gi")) < 0 {
			t.Errorf("pod %s runs on %s with %s GPUs (cheapest GPU type %s at $%.3f/h)", p.Name, it.Name, m.String(), cheapest.Name, price)
		}
		slice, err := gpuSlice(e.Env, p.Spec.NodeName)
		if err != nil {
			t.Fatal(err)
		}
		dev := claims[i].Status.Allocation.Devices.Results[0].Device
		for _, d := range slice.Spec.Devices {
			if m := d.Capacity["memory"].Value; d.Name == dev && m.Cmp(resource.MustParse("40Gi")) < 0 {
				t.Errorf("pod %s was given %s with %s", p.Name, dev, m.String())
			}
		}
	}
}

// TestDRATwoGPUsPerPodFromOneNode: each pod's claim asks for two GPUs; each gets two of its own
// node's, and no GPU is given twice.
func TestDRATwoGPUsPerPodFromOneNode(t *testing.T) {
	e := env.NewAWS(t)
	newDRAEnv(e, true)
	create(e.Env, claimTemplate("two-gpus", gpuRequest("gpus", 2)))
	create(e.Env, gpuDeployment("pairs", 3, corev1.PodResourceClaim{Name: "gpus", ResourceClaimTemplateName: ptr.To("two-gpus")}))
	pods, claims := waitClaimsAllocated(e.Env, "app=pairs", "gpus", 3, 2, 3*time.Minute)
	given := map[string]string{}
	for i, c := range claims {
		for _, r := range c.Status.Allocation.Devices.Results {
			key := r.Pool + "/" + r.Device
			if other, ok := given[key]; ok {
				t.Errorf("GPU %s given to %s and %s: %s", key, other, pods[i].Name, describeClaims(claims))
			}
			given[key] = pods[i].Name
		}
	}
}

// TestDRAClaimSharedByPods: three pods share one claim of one GPU. The claim is allocated once,
// on one node, all three run there reserving it, and one node is launched for them.
func TestDRAClaimSharedByPods(t *testing.T) {
	e := env.NewAWS(t)
	newDRAEnv(e, true)
	create(e.Env, claimOf("shared-gpu", gpuRequest("gpu", 1)))
	create(e.Env, gpuDeployment("sharing", 3, corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("shared-gpu")}))
	pods, claims := waitClaimsAllocated(e.Env, "app=sharing", "gpu", 3, 1, 3*time.Minute)
	if c := claims[len(claims)-1]; len(c.Status.ReservedFor) != 3 {
		t.Errorf("the shared claim is reserved for %d pods, want 3: %s", len(c.Status.ReservedFor), describeClaims(claims[len(claims)-1:]))
	}
	for _, p := range pods[1:] {
		if p.Spec.NodeName != pods[0].Spec.NodeName {
			t.Errorf("pods run on %s and %s, though they share one GPU", pods[0].Spec.NodeName, p.Spec.NodeName)
		}
	}
	if claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{}); err != nil || len(claims.Items) != 1 {
		t.Errorf("%v NodeClaims (%v), want one for the one shared GPU", env.ClaimSummary(claims.Items), err)
	}
}

// TestDRABacksNvidiaGPUWithDevices: with a DeviceClass that backs nvidia.com/gpu with DRA devices
// (DRAExtendedResource), the node registers without the resource (no device plugin runs) and a
// pod asking for nvidia.com/gpu runs with a GPU allocated through the claim the scheduler makes.
func TestDRABacksNvidiaGPUWithDevices(t *testing.T) {
	e := env.NewAWS(t)
	newDRAEnv(e, true)
	create(e.Env, &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-extended.nvidia.com"},
		Spec: resourcev1.DeviceClassSpec{
			Selectors:            []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`}}},
			ExtendedResourceName: ptr.To(string(awsv1.ResourceNVIDIAGPU)),
		},
	})
	d := env.DeploymentOf("cuda", 1, "500m", "1Gi")
	gpu := corev1.ResourceList{awsv1.ResourceNVIDIAGPU: resource.MustParse("1")}
	d.Spec.Template.Spec.Containers[0].Resources.Requests[awsv1.ResourceNVIDIAGPU] = gpu[awsv1.ResourceNVIDIAGPU]
	d.Spec.Template.Spec.Containers[0].Resources.Limits = gpu
	create(e.Env, d)
	pods := e.WaitRunning("app=cuda", 1, 3*time.Minute)
	var claim *resourcev1.ResourceClaim
	e.WaitFor("the pod's extended-resource claim allocated", 30*time.Second, func() (bool, string) {
		p, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, pods[0].Name, metav1.GetOptions{})
		if err != nil || p.Status.ExtendedResourceClaimStatus == nil {
			return false, fmt.Sprintf("no extendedResourceClaimStatus (%v)", err)
		}
		claim, err = e.Cluster.Kube.ResourceV1().ResourceClaims("default").Get(e.Ctx, p.Status.ExtendedResourceClaimStatus.ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, err = expectAllocatedOn(p, claim, 1)
		return err == nil, fmt.Sprint(err)
	})
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q, ok := node.Status.Allocatable[awsv1.ResourceNVIDIAGPU]; ok {
		t.Errorf("node %s advertises %s %s beside the DRA devices", node.Name, q.String(), awsv1.ResourceNVIDIAGPU)
	}
	// The NodeClaim was launched for nvidia.com/gpu, which the node never advertises: it is
	// initialized once the node's devices are published.
	e.WaitFor("the node's NodeClaim Initialized", time.Minute, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range claims.Items {
			if c.Status.NodeName == node.Name {
				cond := c.GetCondition(karpv1.ConditionTypeInitialized)
				return c.IsTrue(karpv1.ConditionTypeInitialized), fmt.Sprintf("%+v", cond)
			}
		}
		return false, "no NodeClaim for " + node.Name
	})
}

// TestDRAUnsatisfiableClaimIsExplained: a claim for a GPU with more memory than any type's GPUs
// launches nothing, and the pod gets a FailedProvisioning Event naming the request and its
// selector.
func TestDRAUnsatisfiableClaimIsExplained(t *testing.T) {
	e := env.NewAWS(t)
	newDRAEnv(e, true)
	const huge = `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("4Ti")) >= 0`
	create(e.Env, claimTemplate("huge-gpu", gpuRequest("huge-memory", 1, huge)))
	create(e.Env, gpuDeployment("huge", 1, corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("huge-gpu")}))
	e.WaitFor("a FailedProvisioning Event naming the request and the selector", 2*time.Minute, func() (bool, string) {
		evs := e.EventsFor("FailedProvisioning", "Pod")
		for _, ev := range evs {
			if strings.HasPrefix(ev.Regarding.Name, "huge-") && strings.Contains(ev.Note, "huge-memory") && strings.Contains(ev.Note, huge) {
				return true, ""
			}
		}
		return false, fmt.Sprint(env.Notes(evs))
	})
	if claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{}); err != nil || len(claims.Items) != 0 {
		t.Errorf("%v NodeClaims (%v), want none: no type has such a GPU", env.ClaimSummary(claims.Items), err)
	}
}

// gpuPoolTypes are the types the cloud offers gpuPool, once its EC2NodeClass is ready.
func gpuPoolTypes(e *env.AWS) []*cloud.InstanceType {
	e.T.Helper()
	var types []*cloud.InstanceType
	e.WaitFor("the GPU pool's instance types", time.Minute, func() (bool, string) {
		np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "gpu", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		types, err = e.Provider.InstanceTypes(e.Ctx, np)
		return err == nil && len(types) > 0, fmt.Sprint(err)
	})
	return types
}

// typeOfPod is the instance type of the pod's node, among types.
func typeOfPod(e *env.Env, types []*cloud.InstanceType, p corev1.Pod) *cloud.InstanceType {
	e.T.Helper()
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	name := node.Labels[corev1.LabelInstanceTypeStable]
	for _, it := range types {
		if it.Name == name {
			return it
		}
	}
	e.T.Fatalf("pod %s runs on %s of type %q, which the GPU pool does not offer", p.Name, node.Name, name)
	return nil
}
