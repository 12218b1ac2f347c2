package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// These tests plan pods whose GPUs come from ResourceClaims over EC2's types as the facts
// catalog describes them, with the real DynamicResources plugin and the structured allocator
// over the devices the types' drivers publish (pkg/aws/devices.go).

const (
	gpuClass   = "gpu.nvidia.com"
	memory40Gi = `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`
)

// devicePlanner is a planner over an offline simulator whose cluster holds objects (the
// DeviceClass, the claims), and a NodePool over the facts catalog's on-demand offerings in one
// zone.
func devicePlanner(t testing.TB, objects ...runtime.Object) (*Planner, *simulation.Simulator, Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	objects = append(objects, &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: gpuClass},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`},
		}}},
	})
	sim, err := simulation.NewOffline(ctx, "tailor", objects...)
	if err != nil {
		t.Fatalf("building the offline simulator: %v", err)
	}
	return NewPlanner(sim), sim, factsPool(t, "gpu")
}

func factsPool(t testing.TB, name string) Pool {
	t.Helper()
	catalog, err := tailoraws.FactsCatalog("us-east-1", []string{"us-east-1a"})
	if err != nil {
		t.Fatalf("facts catalog: %v", err)
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-pool-" + name)}}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
	}
	return Pool{NodePool: np, InstanceTypes: catalog}
}

// gpuClaim asks count GPUs of the class, each passing selectors (CEL).
func gpuClaim(name string, count int64, selectors ...string) *resourcev1.ResourceClaim {
	req := resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: gpuClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}
	for _, s := range selectors {
		req.Exactly.Selectors = append(req.Exactly.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-claim-" + name)},
		Spec:       resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{req}}},
	}
}

// claimPod is a small pod using the named claims.
func claimPod(name string, claims ...string) *corev1.Pod {
	p := newPod(name, "1", "2Gi")
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: c})
	}
	return p
}

// gpus returns the GPUs a node of the type publishes, and their memory.
func gpus(it *cloud.InstanceType) (int, []resource.Quantity) {
	var mem []resource.Quantity
	for _, set := range it.Devices {
		if set.Driver != tailoraws.DriverNVIDIAGPU {
			continue
		}
		for _, d := range set.Devices {
			mem = append(mem, d.Capacity["memory"].Value)
		}
	}
	return len(mem), mem
}

// cheapestGPUType is the cheapest type of the pool with an NVIDIA GPU.
func cheapestGPUType(pool Pool) *cloud.InstanceType {
	var best *cloud.InstanceType
	for _, it := range pool.InstanceTypes {
		if n, _ := gpus(it); n == 0 || onDemand(it) == 0 {
			continue
		}
		if best == nil || onDemand(it) < onDemand(best) {
			best = it
		}
	}
	return best
}

// onDemand is the type's on-demand price, 0 when it has no on-demand offering.
func onDemand(it *cloud.InstanceType) float64 {
	for _, o := range it.Offerings {
		if o.CapacityType == karpv1.CapacityTypeOnDemand {
			return o.PricePerHour
		}
	}
	return 0
}

func TestClaimGetsTheCheapestTypeWhoseDevicesSatisfyIt(t *testing.T) {
	claim := gpuClaim("big", 1, memory40Gi)
	pl, _, pool := devicePlanner(t, claim)
	pod := claimPod("trainer", "big")
	in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}}
	plan := pl.Plan(context.Background(), in)
	pc := onlyClaim(t, plan, pod)
	forty := resource.MustParse("40Gi")
	for _, o := range pc.Options {
		n, mem := gpus(o.InstanceType)
		if n == 0 || mem[0].Cmp(forty) < 0 {
			t.Errorf("option %s has %d GPUs of %v: the claim asks one of at least 40Gi", o.InstanceType.Name, n, mem)
		}
	}
	if cheapest := cheapestGPUType(pool); pc.Options[0].InstanceType == cheapest {
		t.Errorf("the claim got %s, the cheapest GPU type, whose GPUs have less than 40Gi", cheapest.Name)
	}
	// The cheapest type of all with such a GPU is the first option: cheaper types lack one.
	for _, it := range pool.InstanceTypes {
		n, mem := gpus(it)
		if n > 0 && mem[0].Cmp(forty) >= 0 && onDemand(it) < pc.Options[0].Offering.PricePerHour && holds(it, []*corev1.Pod{pod}) {
			t.Errorf("the first option is %s, but %s is cheaper and has a GPU of at least 40Gi", pc.Options[0].InstanceType.Name, it.Name)
		}
	}
	t.Logf("planned as %s ($%.3f/h)", pc.Options[0].InstanceType.Name, pc.Options[0].Offering.PricePerHour)
}

func TestPodAskingTwoGPUsGetsOneNodeWithTwo(t *testing.T) {
	pl, _, pool := devicePlanner(t, gpuClaim("pair", 2))
	pod := claimPod("trainer", "pair")
	plan := pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}})
	pc := onlyClaim(t, plan, pod)
	for _, o := range pc.Options {
		if n, _ := gpus(o.InstanceType); n < 2 {
			t.Errorf("option %s has %d GPUs; the pod's claim asks 2 on one node", o.InstanceType.Name, n)
		}
	}
}

func TestPodsWithTheirOwnClaimsNeverShareADevice(t *testing.T) {
	var objects []runtime.Object
	var pending []*corev1.Pod
	for i := range 8 {
		name := fmt.Sprintf("gpu-%d", i)
		objects = append(objects, gpuClaim(name, 1))
		// Big enough in cpu that one GPU's worth of pods does not fit the smallest GPU types.
		pending = append(pending, claimPod(fmt.Sprintf("worker-%d", i), name))
	}
	pl, _, pool := devicePlanner(t, objects...)
	plan := pl.Plan(context.Background(), Input{Pending: pending, Pools: []Pool{pool}})
	placedOnce(t, plan, pending)
	if len(plan.Unplaceable) > 0 {
		t.Fatalf("unplaceable: %v", plan.Unplaceable[0].Reasons)
	}
	for _, pc := range plan.Claims {
		for _, o := range pc.Options {
			if n, _ := gpus(o.InstanceType); n < len(pc.Pods) {
				t.Errorf("claim with %d pods of one GPU each may launch as %s, which has %d", len(pc.Pods), o.InstanceType.Name, n)
			}
		}
	}
	t.Logf("%s", summary(plan))
}

func TestSharedClaimIsAllocatedOnceAndItsPodsFollowIt(t *testing.T) {
	pl, _, pool := devicePlanner(t, gpuClaim("shared", 1))
	pending := []*corev1.Pod{claimPod("a", "shared"), claimPod("b", "shared"), claimPod("c", "shared")}
	plan := pl.Plan(context.Background(), Input{Pending: pending, Pools: []Pool{pool}})
	pc := onlyClaim(t, plan, pending...)
	if len(pc.Pods) != 3 {
		t.Errorf("the claim holds %d pods, want the 3 that share the claim", len(pc.Pods))
	}
	if got := pl.sim.DRA().Allocated("default", "shared"); got == nil {
		t.Errorf("the shared claim is not allocated in the plan")
	}
}

func TestImpossibleClaimIsExplained(t *testing.T) {
	selector := `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("1000Gi")) >= 0`
	pl, _, pool := devicePlanner(t, gpuClaim("huge", 1, selector))
	pod := claimPod("trainer", "huge")
	plan := pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}})
	if len(plan.Claims) != 0 {
		t.Fatalf("planned %d claims for a claim no type can satisfy", len(plan.Claims))
	}
	reasonContains(t, plan, pod, "default/huge", `request "gpu"`, gpuClass, selector)
}

func TestPodWaitsForItsClaimToBeCreated(t *testing.T) {
	pl, _, pool := devicePlanner(t)
	pod := newPod("trainer", "1", "2Gi")
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
	plan := pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}})
	if len(plan.Claims) != 0 || len(plan.Unplaceable) != 0 {
		t.Fatalf("a pod whose claim is not created yet was planned: %s, unplaceable %d", summary(plan), len(plan.Unplaceable))
	}
	if len(plan.Waiting) != 1 || plan.Waiting[0].Pod != pod || !strings.Contains(plan.Waiting[0].Reasons[""], "not") {
		t.Fatalf("waiting = %+v, want the pod", plan.Waiting)
	}
}

// Pods that spread are weighed once more when the plan is done (besideThePlan), with fresh
// PreFilter states: their claims, allocated by the plan by then, must still hold them where the
// plan put them.
func TestSpreadingPodsWithClaimsKeepTheirPlaceWhenThePlanIsWeighed(t *testing.T) {
	var objects []runtime.Object
	var pending []*corev1.Pod
	for i := range 4 {
		name := fmt.Sprintf("gpu-%d", i)
		objects = append(objects, gpuClaim(name, 1))
		p := claimPod(fmt.Sprintf("replica-%d", i), name)
		p.Labels = map[string]string{"app": "inference"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "inference"}}}}
		pending = append(pending, p)
	}
	pl, _, pool := devicePlanner(t, objects...)
	plan := pl.Plan(context.Background(), Input{Pending: pending, Pools: []Pool{pool}})
	if len(plan.Unplaceable) > 0 {
		t.Fatalf("pod %s unplaceable: %v", plan.Unplaceable[0].Pod.Name, plan.Unplaceable[0].Reasons)
	}
	placedOnce(t, plan, pending)
	for _, pc := range plan.Claims {
		for _, o := range pc.Options {
			if n, _ := gpus(o.InstanceType); n < len(pc.Pods) {
				t.Errorf("claim with %d pods of one GPU each may launch as %s, which has %d", len(pc.Pods), o.InstanceType.Name, n)
			}
		}
	}
	t.Logf("%s", summary(plan))
}

// A node in flight publishes its type's devices before its driver runs: a pod with a claim goes
// there while a device is left, and the next one, whose device is not, gets a claim of its own.
func TestNodeInFlightHoldsClaimsUpToItsDevices(t *testing.T) {
	pl, _, pool := devicePlanner(t, gpuClaim("gpu-a", 1), gpuClaim("gpu-b", 1))
	launching := readyNode("launching", "4", "16Gi")
	launching.Labels[corev1.LabelInstanceTypeStable] = "g6e.xlarge" // one GPU
	pending := []*corev1.Pod{claimPod("a", "gpu-a"), claimPod("b", "gpu-b")}
	plan := pl.Plan(context.Background(), Input{Pending: pending, Nodes: []*corev1.Node{launching},
		InFlight: map[string]string{"launching": "claim-1"}, Pools: []Pool{pool}})
	if len(plan.InFlight["claim-1"]) != 1 || len(plan.Claims) != 1 || len(plan.Claims[0].Pods) != 1 {
		t.Fatalf("want one pod on the node in flight and one on a new claim; got %s", summary(plan))
	}
}

// onNodeInFlight is pod as an earlier plan counted it: on the node in flight, not bound yet.
func onNodeInFlight(pod *corev1.Pod, node string) *corev1.Pod {
	pod.Spec.NodeName = node
	return pod
}

// A pod an earlier round sent to a node in flight takes its shared claim there: the pods that
// share it and come a round later follow it to that node, as the scheduler will send them, even
// while the node's type, and so its devices, are not known yet (TestDRAClaimSharedByPods, under
// load, launched a second node for them).
func TestPodsSharingAClaimFollowItToTheNodeInFlightAnEarlierRoundChose(t *testing.T) {
	pl, _, pool := devicePlanner(t, gpuClaim("shared", 1))
	launching := readyNode("launching", "8", "32Gi")
	delete(launching.Labels, corev1.LabelInstanceTypeStable) // not launched yet: no type, no devices
	counted := onNodeInFlight(claimPod("a", "shared"), "launching")
	pending := []*corev1.Pod{claimPod("b", "shared"), claimPod("c", "shared")}
	plan := pl.Plan(context.Background(), Input{Pending: pending, Nodes: []*corev1.Node{launching}, Pods: []*corev1.Pod{counted},
		InFlight: map[string]string{"launching": "claim-1"}, Pools: []Pool{pool}})
	if len(plan.Claims) != 0 || len(plan.InFlight["claim-1"]) != 2 {
		t.Fatalf("want both pods on the node in flight their claim is headed for, no new claim; got %s", summary(plan))
	}
}

// A pod counted on a node in flight takes the device its claim will get there: a pod with a
// claim of its own does not get that device too.
func TestPodCountedOnANodeInFlightTakesItsDevice(t *testing.T) {
	pl, _, pool := devicePlanner(t, gpuClaim("gpu-a", 1), gpuClaim("gpu-b", 1))
	launching := readyNode("launching", "8", "32Gi")
	launching.Labels[corev1.LabelInstanceTypeStable] = "g6e.xlarge" // one GPU
	counted := onNodeInFlight(claimPod("a", "gpu-a"), "launching")
	pending := []*corev1.Pod{claimPod("b", "gpu-b")}
	plan := pl.Plan(context.Background(), Input{Pending: pending, Nodes: []*corev1.Node{launching}, Pods: []*corev1.Pod{counted},
		InFlight: map[string]string{"launching": "claim-1"}, Pools: []Pool{pool}})
	if len(plan.InFlight["claim-1"]) != 0 || len(plan.Claims) != 1 {
		t.Fatalf("the node in flight's one GPU is pod a's: want pod b on a new claim; got %s", summary(plan))
	}
}
