package ai

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestDRAConsolidationMovesAClaimToDevicesThatSatisfyIt: a pod whose claim holds one GPU of at
// least 16 GiB runs beside a big pod on a large GPU node. Once the big pod is gone, consolidation
// replaces the node with a cheaper one whose GPUs satisfy the claim: the pod moves there and its
// claim is allocated from the new node's GPU. (Before, the allocated claim held the pod to its
// node, and such a node was never consolidated.)
func TestDRAConsolidationMovesAClaimToDevicesThatSatisfyIt(t *testing.T) {
	e := env.NewAWS(t)
	newDRAEnv(e, false)
	e.ApplyExample("ec2nodeclass.yaml")
	np := gpuPool()
	np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(0)
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	e.CreateNodePool(np)
	types := gpuPoolTypes(e)

	big := env.DeploymentOf("big", 1, "30", "8Gi")
	create(e.Env, big)
	node := e.WaitRunning("app=big", 1, 3*time.Minute)[0].Spec.NodeName
	const memoryAtLeast16Gi = `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) >= 0`
	create(e.Env, claimTemplate("gpu16", gpuRequest("gpu", 1, memoryAtLeast16Gi)))
	create(e.Env, gpuDeployment("infer", 1, corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu16")}))
	pods, _ := waitClaimsAllocated(e.Env, "app=infer", "gpu", 1, 1, 2*time.Minute)
	if pods[0].Spec.NodeName != node {
		t.Fatalf("the GPU pod went to %s, not beside the big pod on %s", pods[0].Spec.NodeName, node)
	}
	before := typeOfPod(e.Env, types, pods[0])

	e.Scale(big, 0)
	e.WaitNodeGone(node, 3*time.Minute)
	pods, claims := waitClaimsAllocated(e.Env, "app=infer", "gpu", 1, 1, 2*time.Minute)
	after := typeOfPod(e.Env, types, pods[0])
	if pods[0].Spec.NodeName == node {
		t.Fatalf("the GPU pod still runs on %s", node)
	}
	slice, err := gpuSlice(e.Env, pods[0].Spec.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	dev := claims[0].Status.Allocation.Devices.Results[0].Device
	for _, d := range slice.Spec.Devices {
		if m := d.Capacity["memory"].Value; d.Name == dev && m.Cmp(resource.MustParse("16Gi")) < 0 {
			t.Errorf("after consolidation the pod was given %s with %s", dev, m.String())
		}
	}
	if p, q := onDemandPrice(before), onDemandPrice(after); q >= p {
		t.Errorf("the replacement %s ($%.3f/h) is not cheaper than %s ($%.3f/h)", after.Name, q, before.Name, p)
	}
	t.Logf("consolidated %s (%s) into %s", node, before.Name, after.Name)
}

// onDemandPrice is the type's cheapest on-demand price.
func onDemandPrice(it *cloud.InstanceType) float64 {
	o, _ := it.CheapestOffering(func(o cloud.Offering) bool { return o.CapacityType == karpv1.CapacityTypeOnDemand })
	return o.PricePerHour
}
