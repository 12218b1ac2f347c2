package dra

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

// managerOver is a Manager over the scheduler's own kind of DRA manager, built over a fake
// clientset that holds objects.
func managerOver(t *testing.T, objects ...runtime.Object) *Manager {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := kubefake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	base, err := FromInformers(ctx, client, factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return New(base)
}

func gpus(n int) []cloud.DeviceSet {
	set := cloud.DeviceSet{Driver: "gpu.example.com"}
	for i := range n {
		set.Devices = append(set.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	return []cloud.DeviceSet{set}
}

func node(name, typ string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelInstanceTypeStable: typ}}}
}

// slicesByNode lists the manager's slices by the node name they are published for.
func slicesByNode(t *testing.T, m *Manager) map[string]int {
	t.Helper()
	list, err := m.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range list {
		out[ptr.Deref(s.Spec.NodeName, "")] += len(s.Spec.Devices)
	}
	return out
}

func TestEachTypeOfATemplateIsAViewOfItsOwn(t *testing.T) {
	m := managerOver(t)
	m.SetTemplate("planned-0", map[string][]cloud.DeviceSet{"one": gpus(1), "eight": gpus(8)})
	got := slicesByNode(t, m)
	if got["planned-0.one"] != 1 || got["planned-0.eight"] != 8 || len(got) != 2 {
		t.Fatalf("devices by node = %v, want 1 on planned-0.one and 8 on planned-0.eight", got)
	}
	if name, ok := m.ViewName(node("planned-0", "eight")); !ok || name != "planned-0.eight" {
		t.Errorf("view of planned-0 as eight = %q, %v", name, ok)
	}
	if _, ok := m.ViewName(node("ip-10-0-0-1", "eight")); ok {
		t.Errorf("a node that is no template got a view")
	}
	if _, ok := m.ViewName(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "planned-0"}}); ok {
		t.Errorf("a template whose type is not settled got a view")
	}
	m.SetTemplate("planned-0", nil)
	if got := slicesByNode(t, m); len(got) != 0 {
		t.Errorf("a forgotten template still publishes %v", got)
	}
}

func TestANodeInFlightYieldsToWhatItsDriverPublished(t *testing.T) {
	published := cloud.ResourceSlices("ready", gpus(2))[0]
	m := managerOver(t, published)
	m.SetNode("ready", gpus(2))
	m.SetNode("launching", gpus(4))
	got := slicesByNode(t, m)
	if got["ready"] != 2 || got["launching"] != 4 {
		t.Fatalf("devices by node = %v, want the 2 ready publishes (once) and the 4 launching will", got)
	}
}

// allocated is a claim allocated one device of the pool named after node.
func allocated(claim *resourceapi.ResourceClaim, node, device string) *resourceapi.ResourceClaim {
	c := claim.DeepCopy()
	c.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: device},
		}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}
	return c
}

func TestAClaimAllocatedOnEveryViewIsOneAllocationOnTheNode(t *testing.T) {
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "default", UID: types.UID("uid-shared")}}
	m := managerOver(t, claim)
	tracker := m.ResourceClaims()
	err := m.Gather("planned-0", func() error {
		for _, view := range []string{"planned-0.one", "planned-0.eight"} {
			if err := tracker.SignalClaimPendingAllocation(claim.UID, allocated(claim, view, "gpu-0")); err != nil {
				return err
			}
			// Nothing is recorded before the views are all weighed.
			if m.Allocated("default", "shared") != nil {
				t.Errorf("the claim was recorded while %s was weighed", view)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tracker.Get("default", "shared")
	if err != nil || got.Status.Allocation == nil {
		t.Fatalf("the claim is not served allocated: %v, %v", got, err)
	}
	var names []string
	for _, term := range got.Status.Allocation.NodeSelector.NodeSelectorTerms {
		names = append(names, term.MatchFields[0].Values...)
	}
	if fmt.Sprint(names) != "[planned-0 planned-0.one planned-0.eight]" {
		t.Errorf("the claim's pods may go to %v, want the node and each of its views", names)
	}
	if tracker.GetPendingAllocation(claim.UID) != nil {
		t.Errorf("the plan's allocation is served as pending: a pod sharing the claim would wait for it")
	}
	devices, err := tracker.ListAllAllocatedDevices()
	if err != nil {
		t.Fatal(err)
	}
	for _, view := range []string{"planned-0.one", "planned-0.eight"} {
		if !devices.Has(structured.MakeDeviceID("gpu.example.com", view, "gpu-0")) {
			t.Errorf("gpu-0 of %s is not taken: %v", view, devices)
		}
	}
	m.Reset()
	if got, _ := tracker.Get("default", "shared"); got.Status.Allocation != nil {
		t.Errorf("after Reset the claim is still allocated")
	}
	if devices, _ := tracker.ListAllAllocatedDevices(); devices.Len() != 0 {
		t.Errorf("after Reset devices are still taken: %v", devices)
	}
}
