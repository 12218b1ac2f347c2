package ai

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// gpuClass is the DeviceClass of examples/dra/deviceclass-gpu.yaml.
const gpuClass = "gpu.nvidia.com"

// gpuRequest asks for count GPUs of gpuClass that pass every CEL selector.
func gpuRequest(name string, count int64, cel ...string) resourcev1.DeviceRequest {
	req := resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: gpuClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}
	for _, expr := range cel {
		req.Exactly.Selectors = append(req.Exactly.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: expr}})
	}
	return req
}

func claimTemplate(name string, reqs ...resourcev1.DeviceRequest) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs}}},
	}
}

func claimOf(name string, reqs ...resourcev1.DeviceRequest) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs}},
	}
}

// withClaim makes the pod's container use the claim, from a template or an existing claim.
func withClaim(spec *corev1.PodSpec, claim corev1.PodResourceClaim) {
	spec.ResourceClaims = append(spec.ResourceClaims, claim)
	spec.Containers[0].Resources.Claims = append(spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: claim.Name})
}

// gpuDeployment is a Deployment of small pods that each use claim.
func gpuDeployment(name string, replicas int32, claim corev1.PodResourceClaim) *appsv1.Deployment {
	d := env.DeploymentOf(name, replicas, "500m", "1Gi")
	withClaim(&d.Spec.Template.Spec, claim)
	return d
}

// gpuPool is a NodePool of on-demand NVIDIA GPU types, with the examples' EC2NodeClass.
func gpuPool() *karpv1.NodePool {
	return env.NodePool("gpu",
		karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceGPUManufacturer, Operator: corev1.NodeSelectorOpIn, Values: []string{"nvidia"}},
		karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}})
}

// newDRAEnv is an AWS environment with the GPU DeviceClass and, when pool is set, the examples'
// EC2NodeClass and gpuPool.
func newDRAEnv(e *env.AWS, pool bool) {
	e.T.Helper()
	e.T.Cleanup(func() { logWhyPending(e.Env) })
	e.ApplyExample("dra/deviceclass-gpu.yaml")
	if pool {
		e.ApplyExample("ec2nodeclass.yaml")
		e.CreateNodePool(gpuPool())
	}
}

// podClaim reads the ResourceClaim the pod's claim entry resolves to: the named claim, or the one
// the resourceclaim controller made from the template and recorded in the pod's status.
func podClaim(e *env.Env, pod *corev1.Pod, entry string) (*resourcev1.ResourceClaim, error) {
	name := ""
	for _, c := range pod.Spec.ResourceClaims {
		if c.Name == entry && c.ResourceClaimName != nil {
			name = *c.ResourceClaimName
		}
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == entry && s.ResourceClaimName != nil {
			name = *s.ResourceClaimName
		}
	}
	if name == "" {
		return nil, fmt.Errorf("pod %s has no ResourceClaim for %q yet", pod.Name, entry)
	}
	return e.Cluster.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(e.Ctx, name, metav1.GetOptions{})
}

// expectAllocatedOn checks that the claim is allocated want devices of gpuClass's driver from
// the pod's node, and reserved for the pod; it returns the devices' names.
func expectAllocatedOn(pod *corev1.Pod, claim *resourcev1.ResourceClaim, want int) ([]string, error) {
	a := claim.Status.Allocation
	if a == nil {
		return nil, fmt.Errorf("claim %s of pod %s is not allocated", claim.Name, pod.Name)
	}
	var devices []string
	for _, r := range a.Devices.Results {
		if r.Driver != tailoraws.DriverNVIDIAGPU || r.Pool != pod.Spec.NodeName {
			return nil, fmt.Errorf("claim %s: device %s/%s/%s is not a GPU of node %s", claim.Name, r.Driver, r.Pool, r.Device, pod.Spec.NodeName)
		}
		devices = append(devices, r.Device)
	}
	if len(devices) != want {
		return nil, fmt.Errorf("claim %s has %d devices %v, want %d", claim.Name, len(devices), devices, want)
	}
	if !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == pod.UID }) {
		return nil, fmt.Errorf("claim %s is not reserved for pod %s: %+v", claim.Name, pod.Name, claim.Status.ReservedFor)
	}
	return devices, nil
}

// waitClaimsAllocated waits until every pod of the selector runs with its claim entry allocated
// want devices on its node, and returns the pods and their claims.
func waitClaimsAllocated(e *env.Env, selector, entry string, pods, want int, timeout time.Duration) ([]corev1.Pod, []*resourcev1.ResourceClaim) {
	e.T.Helper()
	running := e.WaitRunning(selector, pods, timeout)
	var claims []*resourcev1.ResourceClaim
	e.WaitFor("the claims allocated on the pods' nodes", 30*time.Second, func() (bool, string) {
		claims = nil
		for i := range running {
			p, err := e.Cluster.Kube.CoreV1().Pods(running[i].Namespace).Get(e.Ctx, running[i].Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			running[i] = *p
			c, err := podClaim(e, p, entry)
			if err != nil {
				return false, err.Error()
			}
			if _, err := expectAllocatedOn(p, c, want); err != nil {
				return false, err.Error()
			}
			claims = append(claims, c)
		}
		return true, ""
	})
	return running, claims
}

// gpuSlice is the slice the stand-in driver published for the node's GPUs.
func gpuSlice(e *env.Env, node string) (*resourcev1.ResourceSlice, error) {
	list, err := e.Cluster.Kube.ResourceV1().ResourceSlices().List(e.Ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].Spec.Driver == tailoraws.DriverNVIDIAGPU {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("node %s has no %s slice (%d slices)", node, tailoraws.DriverNVIDIAGPU, len(list.Items))
}

// gpuMemory is the memory of the type's GPUs (zero for a type without NVIDIA GPUs).
func gpuMemory(sets []cloud.DeviceSet) resource.Quantity {
	for _, s := range sets {
		if s.Driver == tailoraws.DriverNVIDIAGPU && len(s.Devices) > 0 {
			return s.Devices[0].Capacity["memory"].Value
		}
	}
	return resource.Quantity{}
}

// cheapestGPUType is the type of the pool with NVIDIA GPUs and the lowest available price.
func cheapestGPUType(types []*cloud.InstanceType) (*cloud.InstanceType, float64) {
	var best *cloud.InstanceType
	bestPrice := 0.0
	for _, it := range types {
		if m := gpuMemory(it.Devices); m.IsZero() {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && o.CapacityType == karpv1.CapacityTypeOnDemand && (best == nil || o.PricePerHour < bestPrice) {
				best, bestPrice = it, o.PricePerHour
			}
		}
	}
	return best, bestPrice
}

// describeClaims is for failure messages: each claim and where it is allocated.
func describeClaims(claims []*resourcev1.ResourceClaim) string {
	var parts []string
	for _, c := range claims {
		where := "unallocated"
		if c.Status.Allocation != nil {
			var devs []string
			for _, r := range c.Status.Allocation.Devices.Results {
				devs = append(devs, r.Pool+"/"+r.Device)
			}
			where = strings.Join(devs, ",")
		}
		parts = append(parts, fmt.Sprintf("%s: %s, %d consumers", c.Name, where, len(c.Status.ReservedFor)))
	}
	return strings.Join(parts, "; ")
}

// create creates a Deployment or a DRA object, failing the test if the API server refuses it.
func create(e *env.Env, obj any) {
	e.T.Helper()
	var err error
	rv1 := e.Cluster.Kube.ResourceV1()
	switch o := obj.(type) {
	case *appsv1.Deployment:
		_, err = e.Cluster.Kube.AppsV1().Deployments(o.Namespace).Create(e.Ctx, o, metav1.CreateOptions{})
	case *resourcev1.ResourceClaimTemplate:
		_, err = rv1.ResourceClaimTemplates(o.Namespace).Create(e.Ctx, o, metav1.CreateOptions{})
	case *resourcev1.ResourceClaim:
		_, err = rv1.ResourceClaims(o.Namespace).Create(e.Ctx, o, metav1.CreateOptions{})
	case *resourcev1.DeviceClass:
		_, err = rv1.DeviceClasses().Create(e.Ctx, o, metav1.CreateOptions{})
	default:
		err = fmt.Errorf("create: unexpected %T", obj)
	}
	if err != nil {
		e.T.Fatal(err)
	}
}

// logWhyPending, when the test failed, logs what the pending pods' conditions and Events say,
// and the NodeClaims: the scheduler's and Tailor's words on why a pod did not land.
func logWhyPending(e *env.Env) {
	if !e.T.Failed() {
		return
	}
	pods, err := e.Cluster.Kube.CoreV1().Pods("default").List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			e.T.Logf("pod %s: %s=%s %s: %s", p.Name, c.Type, c.Status, c.Reason, c.Message)
		}
	}
	events, err := e.Cluster.Kube.EventsV1().Events("default").List(e.Ctx, metav1.ListOptions{})
	if err == nil {
		for _, ev := range events.Items {
			e.T.Logf("event %s %s/%s: %s", ev.Reason, ev.Regarding.Kind, ev.Regarding.Name, ev.Note)
		}
	}
	if claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{}); err == nil {
		e.T.Logf("NodeClaims: %s", env.ClaimSummary(claims.Items))
	}
}
