package disruption

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// A pod whose claim is allocated from its node's devices moves, in a removal's probe, only to
// capacity whose devices satisfy the claim: the claim is allocated anew there, as it is once the
// pod is evicted and the claim deallocated. The types here: m6i.2xlarge carries an FPGA of model
// A, m6i.xlarge (cheaper) one of model B, no other type any.

const fpgaDriver = "fpga.example.com"

func fpgaSet(model string) []cloud.DeviceSet {
	return []cloud.DeviceSet{{Driver: fpgaDriver, Devices: []resourcev1.Device{{Name: "fpga-0",
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr.To(model)}}}}}}
}

// fpgaClaim asks one FPGA of model A, allocated on node's fpga-0 and reserved for pods.
func fpgaClaim(name, node string, pods ...*corev1.Pod) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-claim-" + name)},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "fpga",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: fpgaDriver, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["fpga.example.com"].model == "A"`}}}}}}}},
	}
	c.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "fpga", Driver: fpgaDriver, Pool: node, Device: "fpga-0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}},
	}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

func usingClaim(name string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "fpga", ResourceClaimName: ptr.To(name)}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "fpga"}}
	}
}

// fpgaCluster is a cluster with node "old" (an m6i.2xlarge, its FPGA published) running "worker",
// whose claim holds that FPGA, and a planner over a simulator that knows the cluster's DRA
// objects. shared adds a pod on another node that shares the claim.
func fpgaCluster(t *testing.T, shared bool) (*cluster, *planner.Planner) {
	c := newCluster(t, newPool("default", onDemandOnly()))
	var types []*cloud.InstanceType
	for _, it := range c.TypesByPool["default"] {
		switch it.Name {
		case "m6i.2xlarge", "m6i.xlarge":
			cp := *it
			cp.Devices = fpgaSet(map[string]string{"m6i.2xlarge": "A", "m6i.xlarge": "B"}[it.Name])
			it = &cp
		}
		types = append(types, it)
	}
	c.TypesByPool["default"] = types
	c.node("old", "default", od2XLarge)
	worker := c.pod("worker", "old", "500m", "1Gi", usingClaim("fpga"))
	holders := []*corev1.Pod{worker}
	if shared {
		c.node("other", "default", od2XLarge, notConsolidatable())
		holders = append(holders, c.pod("sharer", "old", "100m", "128Mi", usingClaim("fpga")))
	}
	objects := []runtime.Object{
		&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: fpgaDriver}, Spec: resourcev1.DeviceClassSpec{
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "fpga.example.com"`}}}}},
		fpgaClaim("fpga", "old", holders...),
	}
	for _, s := range cloud.ResourceSlices("old", fpgaSet("A")) {
		objects = append(objects, s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sim, err := simulation.NewOffline(ctx, "tailor", objects...)
	if err != nil {
		t.Fatal(err)
	}
	return c, planner.NewPlanner(sim)
}

func TestRemovalMovesAClaimOnlyToDevicesThatSatisfyIt(t *testing.T) {
	c, pl := fpgaCluster(t, false)
	out := simulate(context.Background(), pl, c.State, []*Candidate{candidate(t, c.State, "old")})
	if !out.OK() || len(out.Replacements) != 1 {
		t.Fatalf("removing old: %+v, want one replacement for the worker and its FPGA", out)
	}
	for _, o := range out.Replacements[0].Options {
		sets := o.InstanceType.Devices
		if len(sets) == 0 || *sets[0].Devices[0].Attributes["model"].StringValue != "A" {
			t.Errorf("the replacement may launch as %s, whose devices %+v do not satisfy the claim (an FPGA of model A)", o.InstanceType.Name, sets)
		}
	}
}

// A claim that a pod staying on another node shares stays allocated where it is: the pod moved
// with the removal could only follow it to the removed node, so the removal is refused.
func TestRemovalKeepsAClaimThatAPodNotMovedShares(t *testing.T) {
	c, pl := fpgaCluster(t, true)
	// The sharer runs on old too in this cluster; move it to "other" so it stays.
	for _, p := range c.Pods {
		if p.Name == "sharer" {
			p.Spec.NodeName = "other"
		}
	}
	out := simulate(context.Background(), pl, c.State, []*Candidate{candidate(t, c.State, "old")})
	if out.OK() || !strings.Contains(out.Unplaceable, "default/worker") {
		t.Fatalf("removing old: %+v, want the worker unplaceable: its claim stays on old, held by the sharer", out)
	}
}
