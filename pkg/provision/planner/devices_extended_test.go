package planner

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// gpuBackingClass maps nvidia.com/gpu to NVIDIA's DRA devices (DRAExtendedResource).
func gpuBackingClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-extended.nvidia.com"},
		Spec: resourcev1.DeviceClassSpec{
			Selectors:            []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`}}},
			ExtendedResourceName: ptr.To(string(awsv1.ResourceNVIDIAGPU)),
		},
	}
}

// gpuPod asks n nvidia.com/gpu the way a pod written for the device plugin does.
func gpuPod(name string, n int64) *corev1.Pod {
	p := newPod(name, "1", "2Gi")
	q := *resource.NewQuantity(n, resource.DecimalSI)
	p.Spec.Containers[0].Resources.Requests[awsv1.ResourceNVIDIAGPU] = q
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{awsv1.ResourceNVIDIAGPU: q}
	return p
}

func TestExtendedResourceBackedByDevicesIsPlannedOnThem(t *testing.T) {
	pl, _, pool := devicePlanner(t, gpuBackingClass())
	pod := gpuPod("cuda", 2)
	plan := pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}})
	if len(plan.Unplaceable) > 0 {
		t.Fatalf("unplaceable: %v", plan.Unplaceable[0].Reasons)
	}
	pc := onlyClaim(t, plan, pod)
	for _, o := range pc.Options {
		if n, _ := gpus(o.InstanceType); n < 2 {
			t.Errorf("option %s has %d GPUs; the pod asks 2 nvidia.com/gpu", o.InstanceType.Name, n)
		}
	}
}

// Pods asking one nvidia.com/gpu each take one device each: a claim holds no more of them than
// its types have GPUs, and the overlay serves the allocations of the plugin's own claims.
func TestExtendedResourcePodsNeverShareADevice(t *testing.T) {
	pl, _, pool := devicePlanner(t, gpuBackingClass())
	var pending []*corev1.Pod
	for i := range 6 {
		pending = append(pending, gpuPod(fmt.Sprintf("cuda-%d", i), 1))
	}
	plan := pl.Plan(context.Background(), Input{Pending: pending, Pools: []Pool{pool}})
	if len(plan.Unplaceable) > 0 {
		t.Fatalf("unplaceable: %v", plan.Unplaceable[0].Reasons)
	}
	placedOnce(t, plan, pending)
	aGPUEach(t, plan)
	t.Logf("%s", summary(plan))
}

// Without a DeviceClass that backs it, nvidia.com/gpu is the device plugin's: the types'
// advertised count is what is planned, as before.
func TestExtendedResourceWithoutBackingClassIsTheDevicePlugins(t *testing.T) {
	pl, _, pool := devicePlanner(t)
	pod := gpuPod("cuda", 2)
	if pl.needsDevices(pod) {
		t.Fatalf("a pod asking nvidia.com/gpu needs devices though no DeviceClass backs the resource")
	}
	pc := onlyClaim(t, pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}}), pod)
	for _, o := range pc.Options {
		if q := o.InstanceType.Capacity[awsv1.ResourceNVIDIAGPU]; q.Value() < 2 {
			t.Errorf("option %s advertises %s nvidia.com/gpu; the pod asks 2", o.InstanceType.Name, q.String())
		}
	}
}

// A pod asking nvidia.com/gpu and pods with claims for GPUs take from one count of a node's
// GPUs: both allocate through the plan's overlay.
func TestExtendedResourceAndClaimsShareOneCountOfGPUs(t *testing.T) {
	pl, _, pool := devicePlanner(t, gpuBackingClass(), gpuClaim("gpu-a", 1), gpuClaim("gpu-b", 1))
	pending := []*corev1.Pod{gpuPod("cuda", 1), claimPod("a", "gpu-a"), claimPod("b", "gpu-b")}
	plan := pl.Plan(context.Background(), Input{Pending: pending, Pools: []Pool{pool}})
	if len(plan.Unplaceable) > 0 {
		t.Fatalf("unplaceable: %v", plan.Unplaceable[0].Reasons)
	}
	placedOnce(t, plan, pending)
	aGPUEach(t, plan)
	t.Logf("%s", summary(plan))
}

// aGPUEach fails the test if a claim of the plan, whose pods take one GPU each, may launch as a
// type with fewer GPUs than it has pods.
func aGPUEach(t *testing.T, plan *Plan) {
	t.Helper()
	for _, pc := range plan.Claims {
		for _, o := range pc.Options {
			if n, _ := gpus(o.InstanceType); n < len(pc.Pods) {
				t.Errorf("claim with %d pods of one GPU each may launch as %s, which has %d GPUs", len(pc.Pods), o.InstanceType.Name, n)
			}
		}
	}
}
