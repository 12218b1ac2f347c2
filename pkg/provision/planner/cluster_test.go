package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
)

func onNodeNamed(node string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

// The pods of a node that is being deleted or disrupted are planned for before they are evicted,
// and the node offers no room; pods that tolerate the disruption, and DaemonSet pods, stay.
func TestViewPlansForPodsOfLeavingNodes(t *testing.T) {
	deleting := readyNode("deleting", "4", "8Gi")
	now := metav1.NewTime(time.Unix(100, 0))
	deleting.DeletionTimestamp = &now
	disrupted := readyNode("disrupted", "4", "8Gi")
	disrupted.Spec.Taints = []corev1.Taint{karpv1.DisruptedNoScheduleTaint}
	staying := readyNode("staying", "4", "8Gi")
	controller := true
	ds := newPod("ds", "100m", "64Mi", onNodeNamed("deleting"))
	ds.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: &controller}}
	c := &clusterview.Cluster{
		Nodes: []*corev1.Node{deleting, disrupted, staying},
		Pods: []*corev1.Pod{
			newPod("a", "1", "1Gi", onNodeNamed("deleting")),
			newPod("b", "1", "1Gi", onNodeNamed("disrupted")),
			newPod("tolerant", "1", "1Gi", onNodeNamed("deleting"), tolerates(karpv1.DisruptedTaintKey)),
			ds,
			newPod("c", "1", "1Gi", onNodeNamed("staying")),
			newPod("assumed", "1", "1Gi"),
		},
		Assumed: map[types.UID]string{"uid-assumed": "staying"},
	}
	v := c.View(nil)
	var names []string
	for _, n := range v.Nodes {
		names = append(names, n.Name)
	}
	if len(names) != 1 || names[0] != "staying" {
		t.Fatalf("view nodes %v; want only the staying node", names)
	}
	got := map[string]bool{}
	for _, p := range v.Reschedulable {
		got[p.Name] = true
		if p.Spec.NodeName != "" {
			t.Errorf("reschedulable pod %s is still bound to %s; the planner must see it unbound", p.Name, p.Spec.NodeName)
		}
	}
	if len(got) != 2 || !got["a"] || !got["b"] {
		t.Fatalf("reschedulable %v; want a and b", got)
	}
	onStaying := 0
	for _, p := range v.Pods {
		if p.Spec.NodeName == "staying" {
			onStaying++
		}
	}
	if onStaying != 2 || !v.Counted["uid-assumed"] {
		t.Fatalf("%d pods counted on the staying node (assumed counted: %v); want c and the assumed pod", onStaying, v.Counted["uid-assumed"])
	}
}

// A Node joins with the labels its kubelet gave it, and registration syncs the claim's labels and
// taints onto it a moment later. Until then the plan weighs it as the claim says it will be:
// harness seed 1544 planned siblings into the capacity type of a joining node as if the replica
// planned there counted in none, and the scheduler refused the one too many.
func TestViewWeighsAJoiningNodeAsItsClaim(t *testing.T) {
	const app = "web"
	ct := karpv1.CapacityTypeLabelKey
	joining := zonedNode("joining", fake.ZoneA, "2", "8Gi")
	joining.Spec.ProviderID = "fake:///joining"
	joining.Spec.Taints = []corev1.Taint{karpv1.UnregisteredNoExecuteTaint}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-1", Labels: map[string]string{
			karpv1.NodePoolLabelKey: "default", ct: karpv1.CapacityTypeSpot}},
		Spec: karpv1.NodeClaimSpec{
			Taints: []corev1.Taint{{Key: dedicated, Effect: corev1.TaintEffectNoSchedule}},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{fake.ZoneA}}},
		},
		Status: karpv1.NodeClaimStatus{ProviderID: "fake:///joining", NodeName: "joining"},
	}
	spreadCT := spread(app, ct, 2, corev1.DoNotSchedule, minDomains(3))
	first := newPod("web-first", "500m", "512Mi", labelled(app), spreadCT, tolerates(dedicated))
	pending := replicas(3, app, "500m", "512Mi", spreadCT)
	c := &clusterview.Cluster{Nodes: []*corev1.Node{joining}, Pods: append([]*corev1.Pod{first}, pending...),
		Claims: []*karpv1.NodeClaim{claim}, Planned: map[types.UID]string{first.UID: claim.Name}}

	v := c.View(nil)
	if len(v.Nodes) != 1 || v.InFlight["joining"] != claim.Name || !v.Counted[first.UID] {
		t.Fatalf("view: %d nodes, in flight %v, counted %v; want the joining node in flight with the first replica", len(v.Nodes), v.InFlight, v.Counted)
	}
	n := v.Nodes[0]
	if n.Labels[ct] != karpv1.CapacityTypeSpot || n.Labels[corev1.LabelHostname] != "joining" {
		t.Errorf("joining node labels %v; want the claim's capacity type and the node's own hostname", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != dedicated {
		t.Errorf("joining node taints %v; want the claim's taint only (unregistered goes at registration)", n.Spec.Taints)
	}

	// With the first replica counted on spot, a 2-skew capacity-type spread (two domains, below
	// minDomains: a global minimum of 0) leaves one more for spot and two for on-demand.
	in := Input{Pending: pending, Nodes: v.Nodes, Pods: v.Pods, InFlight: v.InFlight, Pools: []Pool{newPool("default")}}
	plan := testPlanner(t).Plan(context.Background(), in)
	if len(plan.Unplaceable) != 0 {
		t.Fatalf("want every replica placed; got %s", summary(plan))
	}
	want := map[string]int{karpv1.CapacityTypeSpot: 1, karpv1.CapacityTypeOnDemand: 2}
	if got := podsPerDomain(t, plan, ct); !maps.Equal(got, want) {
		t.Errorf("new replicas per capacity type %v, want %v; %s", got, want, summary(plan))
	}
	verifyPlan(t, sim, in, plan)
}

// A launching claim whose types are all arm64 stands in as an arm64 node, though its
// requirements name only the types: a zone spread of pods that select arm64 counts the replica
// planned onto it (harness seed 1728, where three plans in a row each put two replicas into a
// zone that allowed two in all).
func TestStandInCarriesWhatItsTypesShare(t *testing.T) {
	const app = "graviton"
	arm := []string{"c6g.large", "m6g.large"}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "launching", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{fake.ZoneA}},
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: arm},
		}},
	}
	zoneSpread := spread(app, corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, minDomains(3))
	arm64 := nodeSelector(corev1.LabelArchStable, karpv1.ArchitectureArm64)
	first := newPod("graviton-first", "500m", "512Mi", labelled(app), zoneSpread, arm64)
	pending := replicas(2, app, "500m", "512Mi", zoneSpread, arm64)
	c := &clusterview.Cluster{Pods: append([]*corev1.Pod{first}, pending...), Claims: []*karpv1.NodeClaim{claim},
		Planned: map[types.UID]string{first.UID: claim.Name}}

	pool := newPool("default")
	v := c.View(map[string][]*cloud.InstanceType{"default": pool.InstanceTypes})
	if len(v.Nodes) != 1 || !v.Counted[first.UID] {
		t.Fatalf("view: %d nodes, counted %v; want the claim's stand-in with the first replica", len(v.Nodes), v.Counted)
	}
	n := v.Nodes[0]
	if n.Labels[corev1.LabelArchStable] != karpv1.ArchitectureArm64 || n.Labels[corev1.LabelTopologyZone] != fake.ZoneA {
		t.Errorf("stand-in labels %v; want arm64 in %s", n.Labels, fake.ZoneA)
	}
	if got, ok := n.Labels[corev1.LabelInstanceTypeStable]; ok {
		t.Errorf("stand-in labelled instance type %q, which its two types do not share", got)
	}

	// With the first replica counted in zone A, a 1-skew spread below minDomains (a global
	// minimum of 0) leaves zone A no room: the other two go to the other zones.
	in := Input{Pending: pending, Nodes: v.Nodes, Pods: v.Pods, InFlight: v.InFlight, Pools: []Pool{pool}}
	plan := testPlanner(t).Plan(context.Background(), in)
	if got := podsPerDomain(t, plan, corev1.LabelTopologyZone); got[fake.ZoneA] != 0 || len(plan.Unplaceable) != 0 {
		t.Errorf("new replicas per zone %v, want none in %s and every replica placed; %s", got, fake.ZoneA, summary(plan))
	}
	verifyPlan(t, sim, in, plan)
}

// TestUnsettledClaimTakesNoPodThatReadsTheOpenKey: a claim in flight that may still launch in any
// of three zones counts its pods in no zone. A replica whose anti-affinity keeps it out of its
// sibling's zone would pass there (a node without the key is no zone), and run beside the
// sibling if the claim launched in that zone: the scheduler would then refuse it the node
// launched for it. It gets a claim settled in another zone instead; a pod that reads no zone
// still takes the room in flight.
func TestUnsettledClaimTakesNoPodThatReadsTheOpenKey(t *testing.T) {
	zone := corev1.LabelTopologyZone
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "launching", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: zone, Operator: corev1.NodeSelectorOpIn, Values: []string{fake.ZoneA, fake.ZoneB, fake.ZoneC}},
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.xlarge"}},
		}},
	}
	plain := newPod("plain", "100m", "128Mi")
	siblingNode := zonedNode("sibling-node", fake.ZoneA, "1", "1Gi")
	apart := with(nil, []corev1.PodAffinityTerm{podTerm("web", zone)})
	// The sibling fills its node: the pod that reads no zone has the claim's room alone to go to.
	sibling := clusterview.OnNode(newPod("web-0", "1", "128Mi", labelled("web"), apart), "sibling-node")
	web := newPod("web-1", "100m", "128Mi", labelled("web"), apart)
	other := newPod("other", "100m", "128Mi")
	c := &clusterview.Cluster{Nodes: []*corev1.Node{siblingNode}, Pods: []*corev1.Pod{plain, sibling, web, other}, Claims: []*karpv1.NodeClaim{claim},
		Planned: map[types.UID]string{plain.UID: claim.Name}}
	pool := newPool("default")
	v := c.View(map[string][]*cloud.InstanceType{"default": pool.InstanceTypes})
	if got := v.Unsettled["launching"]; !slices.Equal(got, []string{zone}) {
		t.Fatalf("the stand-in's open keys are %v, want %s alone", got, zone)
	}
	in := Input{Pending: []*corev1.Pod{web, other}, Nodes: v.Nodes, Pods: v.Pods, InFlight: v.InFlight, Unsettled: v.Unsettled, Pools: []Pool{pool}}
	plan := testPlanner(t).Plan(context.Background(), in)
	var onIt []string
	for _, p := range plan.InFlight["launching"] {
		onIt = append(onIt, p.Name)
	}
	if !slices.Equal(onIt, []string{other.Name}) {
		t.Errorf("on the claim in flight: %v, want the pod that reads no zone alone; %s", onIt, summary(plan))
	}
	pc := onlyClaim(t, plan, web)
	if z := settledOn(t, pc, zone); z == fake.ZoneA {
		t.Errorf("web-1's claim settled in %s, its sibling's zone", z)
	}
	verifyPlan(t, sim, in, plan)
}

// TestStandInHasTheLeastOfEachResource checks that a launching claim stands in as the least of
// each resource among the types it may launch as: two types of the same cpus, listed the larger
// first, must not stand in as the larger's memory, which the claim may never have.
func TestStandInHasTheLeastOfEachResource(t *testing.T) {
	byName := map[string]*cloud.InstanceType{}
	for _, it := range fake.Catalog() {
		byName[it.Name] = it
	}
	large, small := byName["m7g.4xlarge"], byName["c7g.4xlarge"]
	if large == nil || small == nil {
		t.Fatal("the fake catalog lacks m7g.4xlarge or c7g.4xlarge")
	}
	la, sa := large.Allocatable(), small.Allocatable()
	if la.Cpu().Cmp(*sa.Cpu()) != 0 || la.Memory().Cmp(*sa.Memory()) <= 0 {
		t.Fatal("want two types of the same cpus, the first with more memory")
	}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "launching"}, Spec: karpv1.NodeClaimSpec{
		Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{large.Name, small.Name}}}}}
	n := clusterview.StandIn(claim, []*cloud.InstanceType{large, small})
	if got, want := n.Status.Allocatable.Memory(), sa.Memory(); got.Cmp(*want) != 0 {
		t.Errorf("stand-in allocatable memory %s, want %s, the least of its types", got, want)
	}
	if got, want := n.Status.Allocatable.Cpu(), sa.Cpu(); got.Cmp(*want) != 0 {
		t.Errorf("stand-in allocatable cpu %s, want %s", got, want)
	}
	if got, want := n.Status.Capacity.Memory(), small.Capacity.Memory(); got.Cmp(*want) != 0 {
		t.Errorf("stand-in capacity memory %s, want %s", got, want)
	}
}

// Registration lifts karpenter.sh/unregistered from the Node and then writes the claim
// Initialized; the claim can be read before the Node patch. The pod of the node being replaced
// is planned onto its replacement as registration left it, not onto a node of its own (a CI run
// of TestCapacityReservations launched one, which a later pod then took instead of a reservation).
func TestReplacementReadInitializedBeforeItsNodePatchTakesThePodsItReplaces(t *testing.T) {
	leaving := readyNode("leaving", "2", "8Gi")
	leaving.Spec.ProviderID = "fake:///leaving"
	leaving.Spec.Taints = []corev1.Taint{karpv1.DisruptedNoScheduleTaint}
	replacement := readyNode("replacement", "2", "8Gi")
	replacement.Spec.ProviderID = "fake:///replacement"
	replacement.Spec.Taints = []corev1.Taint{karpv1.UnregisteredNoExecuteTaint}
	claimOf := func(name string, initialized bool) *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
			Status: karpv1.NodeClaimStatus{ProviderID: "fake:///" + name, NodeName: name}}
		if initialized {
			c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", time.Unix(100, 0))
		}
		return c
	}
	controller := true
	pod := newPod("web", "1500m", "1Gi", onNodeNamed("leaving"))
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: &controller}}
	c := &clusterview.Cluster{Nodes: []*corev1.Node{leaving, replacement}, Pods: []*corev1.Pod{pod},
		Claims: []*karpv1.NodeClaim{claimOf("leaving", true), claimOf("replacement", true)}}

	v := c.View(nil)
	if len(v.Nodes) != 1 || v.Nodes[0].Name != "replacement" || len(v.Nodes[0].Spec.Taints) != 0 || v.InFlight["replacement"] != "" {
		var got []string
		for _, n := range v.Nodes {
			got = append(got, fmt.Sprintf("%s%v", n.Name, n.Spec.Taints))
		}
		t.Fatalf("view nodes %v (in flight %v); want the replacement alone, untainted and up", got, v.InFlight)
	}
	in := Input{Pending: v.Reschedulable, Nodes: v.Nodes, Pods: v.Pods, InFlight: v.InFlight, Pools: []Pool{newPool("default")}}
	plan := testPlanner(t).Plan(context.Background(), in)
	if len(plan.Claims) != 0 || len(plan.FitsExisting) != 1 || plan.FitsExistingOn[pod.UID] != "replacement" {
		t.Fatalf("want the pod on its replacement and no new claim; got %s", summary(plan))
	}
	verifyPlan(t, sim, in, plan)
}
