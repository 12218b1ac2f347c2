package planner

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
)

// TestPlanOnePod places one pod on one new claim and checks its options against the catalog:
// exactly the available offerings that have room for the pod and satisfy the pod's node selector
// and the NodePool's requirements, cheapest first.
func TestPlanOnePod(t *testing.T) {
	everything := func(*cloud.InstanceType, cloud.Offering) bool { return true }
	cases := []struct {
		name string
		pod  []podOpt
		pool []poolOpt
		keep func(*cloud.InstanceType, cloud.Offering) bool
	}{
		{name: "no constraints", keep: everything},
		{name: "arch selector", pod: []podOpt{nodeSelector(corev1.LabelArchStable, "amd64")},
			keep: func(it *cloud.InstanceType, _ cloud.Offering) bool {
				return it.Labels[corev1.LabelArchStable] == "amd64"
			}},
		{name: "capacity-type selector", pod: []podOpt{nodeSelector(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)},
			keep: func(_ *cloud.InstanceType, o cloud.Offering) bool {
				return o.CapacityType == karpv1.CapacityTypeOnDemand
			}},
		{name: "zone selector", pod: []podOpt{nodeSelector(corev1.LabelTopologyZone, fake.ZoneB)},
			keep: func(_ *cloud.InstanceType, o cloud.Offering) bool { return o.Zone == fake.ZoneB }},
		{name: "NodePool requirement on category", pool: []poolOpt{requirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "r")},
			keep: func(it *cloud.InstanceType, _ cloud.Offering) bool {
				return it.Labels[awsv1.LabelInstanceCategory] == "r"
			}},
		{name: "selector and requirement together",
			pod:  []podOpt{nodeSelector(corev1.LabelArchStable, "arm64"), nodeSelector(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot)},
			pool: []poolOpt{requirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "m", "c")},
			keep: func(it *cloud.InstanceType, o cloud.Offering) bool {
				c := it.Labels[awsv1.LabelInstanceCategory]
				return it.Labels[corev1.LabelArchStable] == "arm64" && o.CapacityType == karpv1.CapacityTypeSpot && (c == "m" || c == "c")
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", "1", "1Gi", tc.pod...)
			plan := testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("default", tc.pool...)}})
			if len(plan.Claims) != 1 || len(plan.Unplaceable) != 0 || len(plan.FitsExisting) != 0 {
				t.Fatalf("want exactly one claim; got %s", summary(plan))
			}
			pc := plan.Claims[0]
			if len(pc.Pods) != 1 || pc.Pods[0] != pod || pc.NodePool.Name != "default" {
				t.Fatalf("claim holds %d pods from pool %q, want pod p from default", len(pc.Pods), pc.NodePool.Name)
			}
			want, cheapest := offeringsHolding([]*corev1.Pod{pod}, tc.keep)
			if len(want) == 0 {
				t.Fatal("test expects no offering; fix the case")
			}
			wantKeys := map[string]bool{}
			for _, w := range want {
				wantKeys[optionKey(w.it, w.o)] = true
			}
			for i, o := range pc.Options {
				key := optionKey(o.InstanceType, o.Offering)
				if !wantKeys[key] {
					t.Errorf("option %s does not satisfy the case, or has no room for the pod", key)
				}
				if i > 0 && o.Offering.PricePerHour < pc.Options[i-1].Offering.PricePerHour {
					t.Errorf("options not price-ordered at %d: %v after %v", i, o.Offering.PricePerHour, pc.Options[i-1].Offering.PricePerHour)
				}
			}
			if n := len(cheapestTypes(want, nodeclaim.MaxInstanceTypes)); len(pc.Options) != n {
				t.Errorf("claim has %d options, the catalog has %d offerings of the %d cheapest types that fit the case", len(pc.Options), n, nodeclaim.MaxInstanceTypes)
			}
			if got := pc.Options[0].Offering.PricePerHour; got != cheapest {
				t.Errorf("cheapest option %s costs %v, the cheapest fitting offering costs %v",
					optionKey(pc.Options[0].InstanceType, pc.Options[0].Offering), got, cheapest)
			}
		})
	}
}

func TestPlanTaints(t *testing.T) {
	pool := newPool("tainted", taint("example.com/dedicated"))
	plain := newPod("plain", "1", "1Gi")
	plan := testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{plain}, Pools: []Pool{pool}})
	if len(plan.Claims) != 0 {
		t.Fatalf("a pod without the toleration got a claim: %s", summary(plan))
	}
	if why := reasonsOf(t, plan, plain)["tainted"]; !strings.Contains(why, "example.com/dedicated") {
		t.Errorf("reason %q does not name the taint key", why)
	}

	tolerant := newPod("tolerant", "1", "1Gi", tolerates("example.com/dedicated"))
	plan = testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{tolerant}, Pools: []Pool{pool}})
	if len(plan.Claims) != 1 || len(plan.Unplaceable) != 0 {
		t.Fatalf("a tolerating pod was not placed: %s", summary(plan))
	}
}

// TestPlanPacks puts pods that fit together on fewer claims than pods, every option of each claim
// with room for all of its pods.
func TestPlanPacks(t *testing.T) {
	cases := []struct {
		name    string
		pending []*corev1.Pod
	}{
		{"10 x 1 cpu", pods(10, "1", "1Gi")},
		{"40 x 1.5 cpu", pods(40, "1500m", "2Gi")},
		{"mixed", mixedPods(60)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := testPlanner(t).Plan(context.Background(), Input{Pending: tc.pending, Pools: []Pool{newPool("default")}})
			if len(plan.Unplaceable) != 0 || len(plan.Claims) == 0 || len(plan.Claims) >= len(tc.pending) {
				t.Fatalf("want fewer claims than pods and none unplaceable; got %s", summary(plan))
			}
			seen := map[string]int{}
			for _, pc := range plan.Claims {
				for _, p := range pc.Pods {
					seen[p.Name]++
				}
				if len(pc.Options) == 0 {
					t.Errorf("claim with %d pods has no options", len(pc.Pods))
				}
				for _, o := range pc.Options {
					if !holds(o.InstanceType, pc.Pods) {
						t.Errorf("option %s has allocatable %v, less than its %d pods ask for: %v",
							o.InstanceType.Name, o.InstanceType.Allocatable(), len(pc.Pods), sumRequests(pc.Pods))
					}
				}
			}
			for _, p := range tc.pending {
				if seen[p.Name] != 1 {
					t.Errorf("pod %s is on %d claims, want 1", p.Name, seen[p.Name])
				}
			}
		})
	}
}

func TestPlanTooBig(t *testing.T) {
	huge := newPod("huge", "200", "1Gi")
	plan := testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{huge}, Pools: []Pool{newPool("default")}})
	if len(plan.Claims) != 0 {
		t.Fatalf("a 200-cpu pod got a claim: %s", summary(plan))
	}
	if why := reasonsOf(t, plan, huge)["default"]; !strings.Contains(why, "largest instance type") || !strings.Contains(why, "Insufficient cpu") {
		t.Errorf("reason %q names neither the shortage nor the largest instance type", why)
	}
}

func TestPlanNoPools(t *testing.T) {
	p := newPod("p", "1", "1Gi")
	plan := testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{p}})
	if why := reasonsOf(t, plan, p)[""]; !strings.Contains(why, "no NodePool") {
		t.Errorf("reason %q does not say there is no NodePool", why)
	}
}

func TestPlanLimits(t *testing.T) {
	cases := []struct {
		name    string
		used    corev1.ResourceList
		pending []*corev1.Pod
		// placed is how many pods fit under the limit of 4 cpu.
		placed int
		inUse  string
	}{
		// Two pods share a 4-vCPU node; a second node would pass the limit.
		{name: "3 x 1.5 cpu", pending: pods(3, "1500m", "1Gi"), placed: 2, inUse: "(4 of 4 in use or planned)"},
		{name: "6 x 1 cpu", pending: pods(6, "1", "1Gi"), placed: 3, inUse: "(4 of 4 in use or planned)"},
		{name: "existing claims hold the limit", used: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			pending: pods(2, "1", "1Gi"), placed: 0, inUse: "(4 of 4 in use or planned)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool("limited", limitCPU("4"))
			pool.Used = tc.used
			plan := testPlanner(t).Plan(context.Background(), Input{Pending: tc.pending, Pools: []Pool{pool}})
			total := tc.used.Cpu().DeepCopy()
			placed := 0
			for _, pc := range plan.Claims {
				placed += len(pc.Pods)
				total.Add(maxCPU(pc))
			}
			if total.Cmp(resource.MustParse("4")) > 0 {
				t.Errorf("claims may launch %s cpu in all, over the limit of 4: %s", total.String(), summary(plan))
			}
			if placed != tc.placed || len(plan.Unplaceable) != len(tc.pending)-tc.placed {
				t.Fatalf("want %d pods placed and the rest unplaceable; got %s", tc.placed, summary(plan))
			}
			for _, u := range plan.Unplaceable {
				if why := u.Reasons["limited"]; !strings.Contains(why, "NodePool limit on cpu is exhausted") || !strings.Contains(why, tc.inUse) {
					t.Errorf("reason %q does not name the cpu limit %s", why, tc.inUse)
				}
			}
		})
	}
}

func TestPlanWeights(t *testing.T) {
	pools := []Pool{newPool("light", weighted(10)), newPool("unweighted"), newPool("heavy", weighted(50)), newPool("also-heavy", weighted(50))}
	SortPools(pools)
	var order []string
	for _, p := range pools {
		order = append(order, p.NodePool.Name)
	}
	if got, want := strings.Join(order, ","), "also-heavy,heavy,light,unweighted"; got != want {
		t.Errorf("SortPools order = %s, want %s", got, want)
	}
	plan := testPlanner(t).Plan(context.Background(), Input{Pending: pods(1, "1", "1Gi"),
		Pools: []Pool{newPool("heavy", weighted(50)), newPool("light", weighted(10))}})
	if len(plan.Claims) != 1 || plan.Claims[0].NodePool.Name != "heavy" {
		t.Fatalf("want one claim from the weight-50 pool; got %s", summary(plan))
	}
	// A pod the heavy pool cannot hold goes to the next pool.
	arm := newPod("arm", "1", "1Gi", nodeSelector(corev1.LabelArchStable, "arm64"))
	plan = testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{arm},
		Pools: []Pool{newPool("heavy", weighted(50), requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")), newPool("light", weighted(10))}})
	if len(plan.Claims) != 1 || plan.Claims[0].NodePool.Name != "light" {
		t.Fatalf("want the arm64 pod on the weight-10 pool; got %s", summary(plan))
	}
}

// TestPlanExistingCapacity sends pods to nodes that exist or are in flight before any new claim,
// counting each pod placed there against the room left.
func TestPlanExistingCapacity(t *testing.T) {
	ready := readyNode("ready", "2", "4Gi")
	launching := readyNode("launching", "2", "4Gi")
	pool := newPool("default")

	plan := testPlanner(t).Plan(context.Background(), Input{Pending: pods(1, "1", "1Gi"), Nodes: []*corev1.Node{ready}, Pools: []Pool{pool}})
	if len(plan.FitsExisting) != 1 || len(plan.Claims) != 0 {
		t.Errorf("want the pod on the ready node and no claim; got %s", summary(plan))
	}

	plan = testPlanner(t).Plan(context.Background(), Input{Pending: pods(1, "1", "1Gi"), Nodes: []*corev1.Node{launching},
		InFlight: map[string]string{"launching": "claim-1"}, Pools: []Pool{pool}})
	if len(plan.InFlight["claim-1"]) != 1 || len(plan.Claims) != 0 || len(plan.FitsExisting) != 0 {
		t.Errorf("want the pod on in-flight claim-1 and no claim; got %s", summary(plan))
	}

	// Each node has room for one 1.5-cpu pod: three pods need one new claim.
	plan = testPlanner(t).Plan(context.Background(), Input{Pending: pods(3, "1500m", "1Gi"),
		Nodes: []*corev1.Node{ready, launching}, InFlight: map[string]string{"launching": "claim-1"}, Pools: []Pool{pool}})
	if len(plan.FitsExisting) != 1 || len(plan.InFlight["claim-1"]) != 1 || len(plan.Claims) != 1 || len(plan.Claims[0].Pods) != 1 {
		t.Errorf("want one pod on each node and one on a new claim; got %s", summary(plan))
	}

	// A pod already bound to the ready node leaves no room for a second one.
	bound := newPod("bound", "1500m", "1Gi")
	bound.Spec.NodeName = "ready"
	plan = testPlanner(t).Plan(context.Background(), Input{Pending: pods(1, "1", "1Gi"),
		Nodes: []*corev1.Node{ready}, Pods: []*corev1.Pod{bound}, Pools: []Pool{pool}})
	if len(plan.FitsExisting) != 0 || len(plan.Claims) != 1 {
		t.Errorf("want a new claim next to the full node; got %s", summary(plan))
	}
}

// DaemonSets' pods are reserved on every new node they would run on: the node must hold them and
// the pending pod. A DaemonSet whose pods would not run there (a node selector the offering does
// not match) costs that offering nothing.
func TestPlanReservesDaemonSetOverhead(t *testing.T) {
	pl := testPlanner(t)
	agent := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", UID: "agent-uid"},
		Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: newPod("x", "1", "1Gi").Spec}},
	}
	armOnly := agent.DeepCopy()
	armOnly.Name, armOnly.UID = "arm-agent", "arm-agent-uid"
	armOnly.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	armOnly.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")

	pod := newPod("app", "1", "1Gi", nodeSelector(corev1.LabelArchStable, "amd64"))
	plan := pl.Plan(context.Background(), Input{
		Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("default")},
		DaemonSets: DaemonSetPods([]*appsv1.DaemonSet{agent, armOnly}),
	})
	if len(plan.Claims) != 1 {
		t.Fatalf("want one claim, got %s", summary(plan))
	}
	pc := plan.Claims[0]
	if len(pc.Daemons) != 1 || pc.Daemons[0].OwnerReferences[0].Name != "agent" {
		t.Fatalf("daemons on the claim: %v; want only agent (arm-agent does not run on amd64)", pc.Daemons)
	}
	both := []*corev1.Pod{pod, pc.Daemons[0]}
	for _, o := range pc.Options {
		if !holds(o.InstanceType, both) {
			t.Errorf("option %s cannot hold the pod and the agent", o.InstanceType.Name)
		}
	}
	claim := nodeclaim.New(pc)
	if got := claim.Spec.Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("claim requests %s cpu; want 2 (the pod and the agent)", got.String())
	}
}

// Identical pods skip the places that turned the first of them away, without changing the plan:
// the memo only applies where a rejection lasts.
func TestGroupOfLeavesOutPodsWhoseRejectionMayNotLast(t *testing.T) {
	group := func(p *corev1.Pod) string { return podkeys.GroupOf(p, podkeys.SpecKey(p), nil) }
	plain := newPod("a", "1", "1Gi")
	twin := newPod("b", "1", "1Gi")
	if group(plain) == "" || group(plain) != group(twin) {
		t.Fatal("identical pods must share a group")
	}
	spread := newPod("c", "1", "1Gi")
	spread.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}
	affine := newPod("d", "1", "1Gi")
	affine.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone}}}}
	for _, p := range []*corev1.Pod{spread, affine} {
		if group(p) != "" {
			t.Errorf("pod %s may fit a place later in the plan; it must not be memoised", p.Name)
		}
	}
	if podkeys.GroupOf(plain, podkeys.SpecKey(plain), []string{corev1.LabelHostname}) != "" {
		t.Error("a pod that the profile's DoNotSchedule default constraints spread must not be memoised")
	}
	other := newPod("e", "2", "1Gi")
	if group(other) == group(plain) {
		t.Error("pods of different shapes share a group")
	}
}

// TestPlanReservesDaemonSetsInFlight: a launching node's DaemonSet pods are not there yet, but
// they will be; the room they take is not offered to pending pods. Once the DaemonSet's pod is on
// the node, it is not counted twice.
func TestPlanReservesDaemonSetsInFlight(t *testing.T) {
	agent := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", UID: "agent-uid"},
		Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: newPod("x", "1", "1Gi").Spec}},
	}
	daemons := DaemonSetPods([]*appsv1.DaemonSet{agent})
	launching := readyNode("launching", "2", "4Gi")
	in := Input{Pending: pods(1, "1500m", "1Gi"), Nodes: []*corev1.Node{launching},
		InFlight: map[string]string{"launching": "claim-1"}, Pools: []Pool{newPool("default")}, DaemonSets: daemons}
	plan := testPlanner(t).Plan(context.Background(), in)
	if len(plan.InFlight["claim-1"]) != 0 || len(plan.Claims) != 1 {
		t.Errorf("the agent's 1 cpu leaves no room for 1.5 cpu on the launching node: want a new claim; got %s", summary(plan))
	}

	running := clusterview.OnNode(daemons[0], "launching")
	in.Pending, in.Pods = pods(1, "900m", "1Gi"), []*corev1.Pod{running}
	plan = testPlanner(t).Plan(context.Background(), in)
	if len(plan.InFlight["claim-1"]) != 1 || len(plan.Claims) != 0 {
		t.Errorf("the agent already runs there and leaves 1 cpu: want the pod in flight; got %s", summary(plan))
	}
}

// A pending pod on its way to a node (nominated there, or planned onto its NodeClaim) is planned
// there while it fits, and before pods without a destination, so that a plan repeated while the
// scheduler binds sends no pod another way than the one it is going.
func TestPlanKeepsPodsOnTheirWay(t *testing.T) {
	nodes := []*corev1.Node{readyNode("n1", "2", "8Gi"), readyNode("n2", "2", "8Gi")}
	on := func(small, big *corev1.Pod, destined map[types.UID]string) map[types.UID]string {
		in := Input{Pending: []*corev1.Pod{big, small}, Nodes: nodes, Pools: []Pool{newPool("default")}, Destined: destined}
		plan := testPlanner(t).Plan(context.Background(), in)
		if len(plan.Claims) != 0 {
			t.Errorf("want no new capacity; got %s", summary(plan))
		}
		return plan.FitsExistingOn
	}
	// First fit alone, biggest first by name, puts both on n1; small is on its way to n2.
	small, big := newPod("small", "500m", "1Gi"), newPod("big", "1500m", "1Gi")
	if got := on(small, big, nil); got[small.UID] != "n1" || got[big.UID] != "n1" {
		t.Fatalf("without destinations want both on n1, got %v", got)
	}
	if got := on(small, big, map[types.UID]string{small.UID: "n2"}); got[small.UID] != "n2" {
		t.Errorf("small counted on %q; it is on its way to n2", got[small.UID])
	}
	// big first would take n1's room from small, which is on its way there: small goes first.
	big = newPod("big", "1600m", "1Gi")
	got := on(small, big, map[types.UID]string{small.UID: "n1"})
	if got[small.UID] != "n1" || got[big.UID] != "n2" {
		t.Errorf("want small on n1, where it is going, and big on n2; got %v", got)
	}
}
