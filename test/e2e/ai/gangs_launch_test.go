package ai

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tailor-sh/tailor/test/e2e/env"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// newGangAWSEnv is an AWS env (the provider against the emulator) with gang scheduling on, the
// example EC2NodeClass, and a NodePool "gang" of on-demand c6g.xlarge and m6g.xlarge: c6g is the
// cheaper, so a plan asks for it first. tailorArgs are added to the quick disruption args.
func newGangAWSEnv(t *testing.T, tailorArgs map[string]any) *env.AWS {
	args := sandbox.QuickDisruptionArgs()
	for k, v := range tailorArgs {
		args[k] = v
	}
	e := env.NewAWSTuned(t, env.AWSCluster, emulator.Region, args, nil, func(o *sandbox.Options) { o.FeatureGates = sandbox.GangGates })
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(env.NodePool("gang",
		karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn,
			Values: []string{"c6g.xlarge", "m6g.xlarge"}},
		karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn,
			Values: []string{karpv1.CapacityTypeOnDemand}}))
	return e
}

// gangGroup is PodGroup name in default with the gang policy minCount.
func gangGroup(name string, minCount int32) *schedulingv1alpha2.PodGroup {
	return &schedulingv1alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: minCount}}}}
}

// createGang creates PodGroup name with gang minCount, and one pod per spec, named name-NN and
// labelled app=name, that joins it.
func createGang(e *env.Env, name string, minCount int32, specs ...corev1.PodSpec) {
	e.T.Helper()
	createGangOf(e, gangGroup(name, minCount), specs...)
}

// createGangOf creates the PodGroup, and one pod per spec, named after it as createGang names them,
// that joins it.
func createGangOf(e *env.Env, group *schedulingv1alpha2.PodGroup, specs ...corev1.PodSpec) {
	e.T.Helper()
	name := group.Name
	created, err := e.Cluster.Kube.SchedulingV1alpha2().PodGroups("default").Create(e.Ctx, group, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("creating PodGroup %s: %v", name, err)
	}
	if group.Spec.SchedulingConstraints != nil && created.Spec.SchedulingConstraints == nil {
		e.T.Fatalf("the API server dropped PodGroup %s's schedulingConstraints: the TopologyAwareWorkloadScheduling gate is off", name)
	}
	for i, spec := range specs {
		spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%02d", name, i),
			Labels: map[string]string{"app": name}}, Spec: spec}
		created, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, pod, metav1.CreateOptions{})
		if err != nil {
			e.T.Fatalf("creating pod %s: %v", pod.Name, err)
		}
		if created.Spec.SchedulingGroup == nil {
			e.T.Fatal("the API server dropped spec.schedulingGroup: the GenericWorkload gate is off")
		}
	}
}

// onDemandOfferings are the on-demand offerings of the instance type in the zones (every zone if none).
func onDemandOfferings(instanceType string, zones ...string) []cloud.OfferingKey {
	if len(zones) == 0 {
		zones = fake.Zones()
	}
	var keys []cloud.OfferingKey
	for _, z := range zones {
		keys = append(keys, cloud.OfferingKey{InstanceType: instanceType, Zone: z, CapacityType: karpv1.CapacityTypeOnDemand})
	}
	return keys
}

// running are the emulator's running instances.
func running(e *env.AWS) []emulator.Instance {
	var out []emulator.Instance
	for _, i := range e.Emu.Instances() {
		if i.State == "running" {
			out = append(out, i)
		}
	}
	return out
}

// TestGangCompletesOnOtherOfferings: the cheapest offering of a 4-pod gang (one pod per node) has
// no capacity; its launches fall back to the next offering and the gang runs whole, with no
// instance of the short offering and none left without a pod of the gang.
func TestGangCompletesOnOtherOfferings(t *testing.T) {
	e := newGangAWSEnv(t, nil)
	e.Emu.InjectInsufficientCapacity(onDemandOfferings("c6g.xlarge")...)
	specs := make([]corev1.PodSpec, 4)
	for i := range specs {
		specs[i] = env.PodSpec("3", "1Gi")
	}
	createGang(e.Env, "ring", 4, specs...)
	pods := e.WaitRunning("app=ring", 4, time.Minute)

	onNode := map[string]int{}
	for _, p := range pods {
		onNode[p.Spec.NodeName]++
	}
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if got := n.Labels[corev1.LabelInstanceTypeStable]; got != "m6g.xlarge" {
			t.Errorf("node %s is %s; want the fallback m6g.xlarge", n.Name, got)
		}
		if onNode[n.Name] == 0 {
			t.Errorf("node %s runs no pod of the gang", n.Name)
		}
	}
	if got := len(running(e)); got != 4 {
		t.Errorf("%d instances running; want the gang's 4", got)
	}
	// The launches met the shortage (rather than never trying c6g): the provider now leaves the
	// short offering out in the zones the gang runs in.
	pool, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "gang", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types, err := e.Provider.InstanceTypes(e.Ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		for _, it := range types {
			for _, o := range it.Offerings {
				if it.Name == "c6g.xlarge" && o.CapacityType == karpv1.CapacityTypeOnDemand && o.Zone == n.Labels[corev1.LabelTopologyZone] && o.Available {
					t.Errorf("c6g.xlarge on-demand in %s is still offered: no launch met its shortage", o.Zone)
				}
			}
		}
	}
}

// TestGangGivenBackWhenItCannotComplete: a 3-pod gang whose pods are pinned one to each zone, and
// whose zone c has no capacity of any allowed offering. The launches in zones a and b succeed,
// the one in zone c fails, and no other offering can take its pod: the PodGroup is told, and
// after gangCompletionTimeout the two instances launched for it are given back, no pod of it
// ever bound.
func TestGangGivenBackWhenItCannotComplete(t *testing.T) {
	e := newGangAWSEnv(t, map[string]any{"gangCompletionTimeout": "10s"})
	e.Emu.InjectInsufficientCapacity(append(onDemandOfferings("c6g.xlarge", fake.ZoneC), onDemandOfferings("m6g.xlarge", fake.ZoneC)...)...)
	var specs []corev1.PodSpec
	for _, z := range fake.Zones() {
		spec := env.PodSpec("3", "1Gi")
		spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: z}
		specs = append(specs, spec)
	}
	createGang(e.Env, "ring", 3, specs...)

	e.WaitFor("instances launched in zones a and b", time.Minute, func() (bool, string) {
		got := e.Emu.Instances()
		return len(got) >= 2, fmt.Sprintf("%d instances", len(got))
	})
	e.WaitFor("a GangGivenBack Event on PodGroup default/ring", time.Minute, func() (bool, string) {
		if evs := e.EventsFor("GangGivenBack", "PodGroup"); len(evs) > 0 {
			return true, evs[0].Note
		}
		return false, fmt.Sprintf("FailedProvisioning on the PodGroup: %d", len(e.EventsFor("FailedProvisioning", "PodGroup")))
	})
	e.WaitFor("every instance launched for the gang terminated", time.Minute, func() (bool, string) {
		claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := running(e)
		return len(running) == 0 && len(claims.Items) == 0, fmt.Sprintf("%d running, NodeClaims: %s", len(running), env.ClaimSummary(claims.Items))
	})
	pods, err := e.Cluster.Kube.CoreV1().Pods("default").List(e.Ctx, metav1.ListOptions{LabelSelector: "app=ring"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s of a gang that never completed was bound to %s", p.Name, p.Spec.NodeName)
		}
	}
	var notes []string
	for _, ev := range e.EventsFor("FailedProvisioning", "PodGroup") {
		notes = append(notes, ev.Note)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "needs at least 3 pods") {
		t.Errorf("the PodGroup was not told why its gang is short: %q", notes)
	}
}
