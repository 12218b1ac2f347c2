package planner

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

func requestsOf(cpu, mem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
}

// initContainer adds an init container; the pod needs the most of any one of them, or of its
// containers together, whichever is more.
func initContainer(cpu, mem string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: fmt.Sprintf("init-%d", len(p.Spec.InitContainers)), Resources: requestsOf(cpu, mem)})
	}
}

// sidecar adds a restartable init container: it runs beside the containers, so it adds to them
// and to every init container after it.
func sidecar(cpu, mem string) podOpt {
	always := corev1.ContainerRestartPolicyAlways
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: fmt.Sprintf("sidecar-%d", len(p.Spec.InitContainers)), Resources: requestsOf(cpu, mem), RestartPolicy: &always})
	}
}

func extraContainer(cpu, mem string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("c-%d", len(p.Spec.Containers)), Resources: requestsOf(cpu, mem)})
	}
}

// podOverhead is what the pod's RuntimeClass charges on top of its containers.
func podOverhead(cpu, mem string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Overhead = requestsOf(cpu, mem).Requests }
}

// asks adds a request (and the equal limit extended resources need) to the first container.
func asks(name corev1.ResourceName, q string) podOpt {
	return func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Resources.Requests[name] = resource.MustParse(q)
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[name] = resource.MustParse(q)
	}
}

// TestConstraintResources places one pod whose requests are more than its first container's and
// checks that the claim's options are exactly the offerings that hold a plain pod asking for what
// the scheduler counts: the pod was neither under- nor over-charged.
func TestConstraintResources(t *testing.T) {
	cases := []struct {
		name string
		pod  []podOpt
		// like asks in plain containers for what the scheduler counts for the pod: cpu, memory and
		// its other requests. Nil when the pod must be unplaceable for the reason in refused.
		like    *corev1.Pod
		refused string
	}{
		// max(init 3.5, containers 0.5): xlarge (3.92 cpu allocatable) holds it, large does not;
		// the sum (4 cpu) would have left out xlarge.
		{name: "init container bigger than the containers", pod: []podOpt{initContainer("3500m", "1Gi")},
			like: newPod("like", "3500m", "1Gi")},
		{name: "containers bigger than the init container", pod: []podOpt{extraContainer("1500m", "512Mi"), initContainer("2", "256Mi")},
			like: newPod("like", "3", "1Gi")},
		{name: "sidecar adds to the containers", pod: []podOpt{sidecar("1", "256Mi")},
			like: newPod("like", "2500m", "768Mi")},
		// Init phase: sidecar 1 + init 2.5 = 3.5 cpu; then sidecar 1 + container 1.5 = 2.5 cpu.
		{name: "sidecar adds to the init containers after it", pod: []podOpt{sidecar("1", "256Mi"), initContainer("2500m", "256Mi")},
			like: newPod("like", "3500m", "768Mi")},
		{name: "pod overhead", pod: []podOpt{podOverhead("1", "512Mi")},
			like: newPod("like", "2500m", "1Gi")},
		{name: "one GPU", pod: []podOpt{asks(fake.ResourceNvidiaGPU, "1")},
			like: newPod("like", "1500m", "512Mi", asks(fake.ResourceNvidiaGPU, "1"))},
		{name: "four GPUs", pod: []podOpt{asks(fake.ResourceNvidiaGPU, "4")},
			like: newPod("like", "1500m", "512Mi", asks(fake.ResourceNvidiaGPU, "4"))},
		{name: "more GPUs than any type has", pod: []podOpt{asks(fake.ResourceNvidiaGPU, "9")},
			refused: "Insufficient nvidia.com/gpu"},
		// Every type of the fake catalog has 20Gi of disk, 17Gi allocatable.
		{name: "ephemeral storage", pod: []podOpt{asks(corev1.ResourceEphemeralStorage, "10Gi")},
			like: newPod("like", "1500m", "512Mi", asks(corev1.ResourceEphemeralStorage, "10Gi"))},
		{name: "more ephemeral storage than any type has", pod: []podOpt{asks(corev1.ResourceEphemeralStorage, "18Gi")},
			refused: "Insufficient ephemeral-storage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", "1500m", "512Mi", tc.pod...)
			in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("default")}}
			plan := testPlanner(t).Plan(context.Background(), in)
			if tc.like == nil {
				if len(plan.Claims) != 0 {
					t.Fatalf("want the pod unplaceable; got %s", summary(plan))
				}
				reasonContains(t, plan, pod, tc.refused)
				return
			}
			pc := onlyClaim(t, plan, pod)
			sameOptions(t, pc, []*corev1.Pod{tc.like}, anyOffering)
			if _, gpu := tc.like.Spec.Containers[0].Resources.Requests[fake.ResourceNvidiaGPU]; gpu {
				everyOption(t, pc, "an NVIDIA GPU type", func(it *cloud.InstanceType, _ cloud.Offering) bool {
					gpus := it.Capacity[fake.ResourceNvidiaGPU]
					return gpus.Value() >= 1
				})
			}
			want := tc.like.Spec.Containers[0].Resources.Requests
			got := nodeclaim.New(pc).Spec.Resources.Requests
			for name, q := range want {
				if g := got[name]; g.Cmp(q) != 0 {
					t.Errorf("the NodeClaim requests %s %s; want %s", name, g.String(), q.String())
				}
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestConstraintResourcesPerNode: pods that ask for a resource every type has the same amount
// of (ephemeral storage), or that few types have (GPUs), get as many claims as that resource
// needs, and every option of every claim holds all of its pods.
func TestConstraintResourcesPerNode(t *testing.T) {
	var disk, gpu []*corev1.Pod
	for i := range 3 {
		disk = append(disk, newPod(fmt.Sprintf("disk-%d", i), "500m", "512Mi", asks(corev1.ResourceEphemeralStorage, "10Gi")))
	}
	for i := range 6 {
		gpu = append(gpu, newPod(fmt.Sprintf("gpu-%d", i), "1", "2Gi", asks(fake.ResourceNvidiaGPU, "1")))
	}
	bestEffort := newPod("best-effort", "0", "0")
	bestEffort.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	// NodeResourcesFit checks only what the incoming pod asks for: cpu and memory when it asks
	// for them, an extended resource when it asks for it, the pod count always. A claim whose last
	// pod asks for less than the others must still offer only types that hold them all (cover.go).
	cases := []struct {
		name    string
		pending []*corev1.Pod
		claims  int
		skip    string
	}{
		// 17Gi allocatable everywhere: one 10Gi pod per node, however big.
		{name: "ephemeral storage", pending: disk, claims: 3},
		// Four GPUs at most per type (g5.12xlarge, g5.24xlarge): two claims at least.
		{name: "GPUs", pending: gpu},
		{name: "GPU pods beside plain pods", pending: append(append([]*corev1.Pod{}, gpu[:3]...), pods(6, "1", "2Gi")...)},
		{name: "a BestEffort pod beside a big one", pending: []*corev1.Pod{newPod("big", "3", "6Gi"), bestEffort}, claims: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			knownBug(t, tc.skip)
			in := Input{Pending: tc.pending, Pools: []Pool{newPool("default")}}
			plan := testPlanner(t).Plan(context.Background(), in)
			placedOnce(t, plan, tc.pending)
			if tc.claims > 0 && len(plan.Claims) != tc.claims {
				t.Errorf("want %d claims; got %s", tc.claims, summary(plan))
			}
			for _, pc := range plan.Claims {
				for _, o := range pc.Options {
					if !holds(o.InstanceType, append(append([]*corev1.Pod{}, pc.Pods...), pc.Daemons...)) {
						t.Errorf("option %s cannot hold its %d pods, which ask for %v", o.InstanceType.Name, len(pc.Pods), sumRequests(pc.Pods))
					}
				}
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestConstraintMaxPods: a claim holds no more pods, its DaemonSet pods included, than the
// allocatable pod count of every type it may launch as (the VPC CNI's limit in the fake catalog:
// 29 on a large).
func TestConstraintMaxPods(t *testing.T) {
	agent := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", UID: "agent-uid"},
		Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: newPod("x", "10m", "16Mi").Spec}},
	}
	cases := []struct {
		name    string
		pool    Pool
		pending []*corev1.Pod
		daemons []*appsv1.DaemonSet
		claims  int
	}{
		// 28 tiny pods and the agent per large node: 100 pods need 4.
		{name: "large only, with a DaemonSet", pool: newPool("default", requirement(awsv1.LabelInstanceSize, corev1.NodeSelectorOpIn, "large")),
			pending: pods(100, "10m", "16Mi"), daemons: []*appsv1.DaemonSet{agent}, claims: 4},
		{name: "large only", pool: newPool("default", requirement(awsv1.LabelInstanceSize, corev1.NodeSelectorOpIn, "large")),
			pending: pods(60, "10m", "16Mi"), claims: 3},
		{name: "whole catalog", pool: newPool("default"), pending: pods(300, "10m", "16Mi")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pending: tc.pending, Pools: []Pool{tc.pool}, DaemonSets: DaemonSetPods(tc.daemons)}
			plan := testPlanner(t).Plan(context.Background(), in)
			placedOnce(t, plan, tc.pending)
			if tc.claims > 0 && len(plan.Claims) != tc.claims {
				t.Errorf("want %d claims; got %s", tc.claims, summary(plan))
			}
			for _, pc := range plan.Claims {
				if len(pc.Daemons) != len(tc.daemons) {
					t.Errorf("claim runs %d DaemonSet pods, want %d", len(pc.Daemons), len(tc.daemons))
				}
				n := int64(len(pc.Pods) + len(pc.Daemons))
				for _, o := range pc.Options {
					if limit := o.InstanceType.Allocatable()[corev1.ResourcePods]; limit.Value() < n {
						t.Errorf("option %s takes %d pods; the claim has %d with its daemons", o.InstanceType.Name, limit.Value(), n)
					}
				}
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestConstraintDaemonSetsFollowTaints adds to TestPlanReservesDaemonSetOverhead (which covers a
// DaemonSet's requests and node selector): a DaemonSet runs, and is reserved for, only on the
// NodePools whose taints it tolerates.
func TestConstraintDaemonSetsFollowTaints(t *testing.T) {
	ds := func(name string, tolerate bool) *appsv1.DaemonSet {
		spec := newPod("x", "1", "1Gi").Spec
		if tolerate {
			spec.Tolerations = []corev1.Toleration{{Key: "example.com/dedicated", Operator: corev1.TolerationOpExists}}
		}
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name)},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	}
	pod := newPod("app", "1", "1Gi", tolerates("example.com/dedicated"))
	in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("dedicated", taint("example.com/dedicated"))},
		DaemonSets: DaemonSetPods([]*appsv1.DaemonSet{ds("everywhere", true), ds("untainted-only", false)})}
	plan := testPlanner(t).Plan(context.Background(), in)
	pc := onlyClaim(t, plan, pod)
	if len(pc.Daemons) != 1 || pc.Daemons[0].OwnerReferences[0].Name != "everywhere" {
		t.Fatalf("daemons on the claim: %d; want only the one that tolerates the pool's taint", len(pc.Daemons))
	}
	sameOptions(t, pc, []*corev1.Pod{pod, pc.Daemons[0]}, anyOffering)
	verifyPlan(t, sim, in, plan)
}
