package planner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/prefilter"
)

// TestKeptPreFilterStatesPlanAsFreshOnes: the planner brings a kept PreFilter state up to date
// with AddPod instead of running PreFilter again for each pod of a spec. The plans must be the
// very plans that fresh states give, and pass the real Filter, on workloads where a kept state
// would go stale if it were reused where it must not be.
func TestKeptPreFilterStatesPlanAsFreshOnes(t *testing.T) {
	cases := []struct {
		name string
		in   func() Input
	}{
		{"Karpenter's five classes", func() Input {
			// 60 pods a class: each of the 30 pairings of cpu and memory twice.
			return Input{Pending: benchPods(300, benchClasses...), Pools: []Pool{newPool("default")}}
		}},
		{"a pod repels pods whose InterPodAffinity was skipped", func() Input {
			// web pods have no terms and nothing repels them at first, so InterPodAffinity skips
			// them; a loner placed after one of them repels the next from its node. Nodes hold
			// two pods, so the loners' node has room that a stale state would give a web pod.
			var pending []*corev1.Pod
			for i := range 12 {
				opts := []podOpt{labelled("web")}
				if i%3 == 1 {
					opts = []podOpt{labelled("loner"), awayFrom("web")}
				}
				pending = append(pending, newPod(fmt.Sprintf("p%02d", i), "900m", "1Gi", opts...))
			}
			pool := newPool("default", requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"))
			return Input{Pending: pending, Pools: []Pool{pool}}
		}},
		{"a claim settles into a zone between two pods that count it there", func() Input {
			// z pods need an app=a pod in their zone. The a pod's claim has no zone until the
			// spreading pod settles it; the second z pod must then see the a pod there.
			zonal := func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{LabelSelector: selecting("a"), TopologyKey: corev1.LabelTopologyZone}}}}
			}
			spread := func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selecting("s")}}
			}
			pending := []*corev1.Pod{
				newPod("p0", "500m", "1Gi", labelled("a")),
				newPod("p1", "500m", "1Gi", labelled("z"), zonal),
				newPod("p2", "500m", "1Gi", labelled("s"), spread),
				newPod("p3", "500m", "1Gi", labelled("z"), zonal),
			}
			return Input{Pending: pending, Pools: []Pool{newPool("default")}}
		}},
		{"existing nodes, spread and preferences", func() Input {
			nodes := []*corev1.Node{zonedNode("n1", fake.ZoneA, "4", "8Gi"), zonedNode("n2", fake.ZoneB, "4", "8Gi")}
			bound := newPod("bound", "1", "1Gi", labelled("web"))
			bound.Spec.NodeName = "n1"
			var pending []*corev1.Pod
			for i := range 24 {
				p := newPod(fmt.Sprintf("p%02d", i), "500m", "1Gi", labelled("web"))
				switch i % 3 {
				case 1:
					p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
						WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selecting("web")}}
				case 2:
					p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
						{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: selecting("web"), TopologyKey: corev1.LabelHostname}}}}}
				}
				pending = append(pending, p)
			}
			return Input{Pending: pending, Nodes: nodes, Pods: []*corev1.Pod{bound}, Pools: []Pool{newPool("default")}}
		}},
		{"a claim opened for another pod adds an empty host to a kept spread", func() Input {
			// h pods spread over hosts (maxSkew 1) and are kept from the first one, which n1 takes
			// when n1 is the only host. x pods need zone b, so each opens a claim: a host with no
			// h pod. The next h pod must see that host, the emptiest, and leave n1.
			hosts := spread("h", corev1.LabelHostname, 1, corev1.DoNotSchedule)
			zoneB := requireNodes([]corev1.NodeSelectorRequirement{match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.ZoneB)})
			var pending []*corev1.Pod
			for i := range 6 {
				opts := []podOpt{labelled("h"), hosts}
				if i%2 == 1 {
					opts = []podOpt{labelled("x"), zoneB}
				}
				pending = append(pending, newPod(fmt.Sprintf("p%02d", i), "500m", "1Gi", opts...))
			}
			return Input{Pending: pending, Nodes: []*corev1.Node{zonedNode("n1", fake.ZoneA, "4", "8Gi")}, Pools: []Pool{newPool("default")}}
		}},
	}
	cases = append(cases, struct {
		name string
		in   func() Input
	}{"a claim that settles into a zone a pod's node affinity refuses leaves its kept spread", func() Input {
		// s pods spread over hosts and refuse zone b (NotIn, so a claim with no zone yet counts
		// for them). x's claim, open in b and c, is an empty host in s1's kept state; y settles
		// it into b, where s pods may not go: the scheduler then counts n1 alone, so s2 may join
		// s1 there. (s3 reuses s2's state.)
		at := func(s int64) podOpt { return func(p *corev1.Pod) { p.CreationTimestamp = metav1.Unix(1000+s, 0) } }
		zones := func(op corev1.NodeSelectorOperator, zones ...string) podOpt {
			return requireNodes([]corev1.NodeSelectorRequirement{match(corev1.LabelTopologyZone, op, zones...)})
		}
		s := func(name string, t int64) *corev1.Pod {
			return newPod(name, "500m", "1Gi", labelled("s"), spread("s", corev1.LabelHostname, 1, corev1.DoNotSchedule),
				zones(corev1.NodeSelectorOpNotIn, fake.ZoneB), at(t))
		}
		return Input{Pending: []*corev1.Pod{
			newPod("x", "3", "4Gi", labelled("x"), zones(corev1.NodeSelectorOpIn, fake.ZoneB, fake.ZoneC), at(0)),
			s("s1", 1),
			newPod("y", "500m", "1Gi", labelled("y"), zones(corev1.NodeSelectorOpIn, fake.ZoneB), at(2)),
			s("s2", 3),
			s("s3", 4),
		}, Nodes: []*corev1.Node{zonedNode("n1", fake.ZoneA, "4", "8Gi")}, Pools: []Pool{newPool("default")}}
	}})
	for _, yZone := range []string{fake.ZoneB, fake.ZoneC} {
		// z pods spread over zones (maxSkew 1). x pods may go to zone b or c, so x's claim is
		// shown in no zone; the z pod that joins it counts in no zone either. A y pod, which needs
		// one of the two, settles the claim there, z pod and all: the z pod after it must count
		// the zone.
		zones := spread("z", corev1.LabelTopologyZone, 1, corev1.DoNotSchedule)
		in := func(zones ...string) podOpt {
			return requireNodes([]corev1.NodeSelectorRequirement{match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...)})
		}
		cases = append(cases, struct {
			name string
			in   func() Input
		}{"a claim that settles into " + yZone + " brings the zone to a kept spread", func() Input {
			return Input{Pending: []*corev1.Pod{
				newPod("p00", "500m", "1Gi", labelled("z"), zones),
				newPod("p01", "500m", "1Gi", labelled("x"), in(fake.ZoneB, fake.ZoneC)),
				newPod("p02", "500m", "1Gi", labelled("z"), zones),
				newPod("p03", "500m", "1Gi", labelled("y"), in(yZone)),
				newPod("p04", "500m", "1Gi", labelled("z"), zones),
			}, Nodes: []*corev1.Node{zonedNode("n1", fake.ZoneA, "4", "8Gi")}, Pools: []Pool{newPool("default")}}
		}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pl := testPlanner(t)
			kept := pl.Plan(context.Background(), tc.in())
			if pl.reused == 0 {
				t.Fatal("no PreFilter state was kept and reused: the case tests nothing")
			}
			t.Logf("%d states reused, %d made from a sibling spec's", pl.reused, pl.derived)
			want := testPlanner(t).plan(context.Background(), tc.in(), true)
			if got, want := planShape(kept), planShape(want); got != want {
				t.Fatalf("plan with kept states differs from the plan with fresh ones:\n kept: %s\nfresh: %s", got, want)
			}
			verifyPlan(t, sim, tc.in(), kept)
		})
	}
}

// planShape writes down everything a plan decided: claims with their pods and options, pods on
// existing nodes, and pods left out with why.
func planShape(plan *Plan) string {
	var b strings.Builder
	for _, c := range plan.Claims {
		names := make([]string, len(c.Pods))
		for i, p := range c.Pods {
			names[i] = p.Name
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "%s[%s](", c.NodePool.Name, strings.Join(names, ","))
		for _, o := range c.Options {
			fmt.Fprintf(&b, "%s ", optionKey(o.InstanceType, o.Offering))
		}
		b.WriteString(") ")
	}
	for _, p := range plan.FitsExisting {
		fmt.Fprintf(&b, "%s@%s ", p.Name, plan.FitsExistingOn[p.UID])
	}
	for _, u := range plan.Unplaceable {
		fmt.Fprintf(&b, "%s!%v ", u.Pod.Name, u.Reasons)
	}
	return b.String()
}

// TestKeptPreFilterStatesOnMixedBatches compares kept and fresh states on random batches of pods
// that select each other across kinds.
func TestKeptPreFilterStatesOnMixedBatches(t *testing.T) {
	reused, derived := 0, 0
	t.Cleanup(func() {
		if reused == 0 {
			t.Error("no PreFilter state was kept and reused in any batch: the test tests nothing")
		}
		// Pods of one kind come in three sizes: the first pod of a size starts from its
		// siblings' state.
		if derived == 0 {
			t.Error("no PreFilter state was made from a sibling spec's in any batch: the test tests nothing")
		}
	})
	for seed := range 30 {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			pl := testPlanner(t)
			kept := pl.Plan(context.Background(), mixedInput(seed))
			reused, derived = reused+pl.reused, derived+pl.derived
			if got, want := planShape(kept), planShape(testPlanner(t).plan(context.Background(), mixedInput(seed), true)); got != want {
				t.Fatalf("plan with kept states differs from the plan with fresh ones:\n kept: %s\nfresh: %s", got, want)
			}
			verifyPlan(t, sim, mixedInput(seed), kept)
		})
	}
}

// mixedKinds require to join pods of an app or avoid them, or spread over zones and hosts. Pods
// that spread select only their own kind: a pod of another kind placed later may land anywhere,
// and the plan is checked as the scheduler would check each pod if it were bound last.
var mixedKinds = []func(p *corev1.Pod, app string){
	func(p *corev1.Pod, app string) {},
	func(p *corev1.Pod, app string) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{LabelSelector: selecting(app), TopologyKey: corev1.LabelTopologyZone}}}}
	},
	func(p *corev1.Pod, app string) { awayFrom(app)(p) },
	func(p *corev1.Pod, app string) {
		labelled("zone-spread")(p)
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selecting("zone-spread")}}
	},
	func(p *corev1.Pod, app string) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selecting(app)}}
	},
	// Kept spread states: hosts (a domain per claim, most of them empty of the kind), zones with
	// minDomains, and zones limited by node affinity, which the node inclusion policy honours.
	func(p *corev1.Pod, app string) {
		labelled("host-spread")(p)
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selecting("host-spread")}}
	},
	func(p *corev1.Pod, app string) {
		labelled("zone-min")(p)
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, MinDomains: ptr.To[int32](3),
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selecting("zone-min")}}
	},
	func(p *corev1.Pod, app string) {
		labelled("zone-two")(p)
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{fake.ZoneA, fake.ZoneB}}}}}}}}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selecting("zone-two")}}
	},
}

// mixedInput is a batch of 40 pods of random kinds, apps and sizes, the same for the same seed.
func mixedInput(seed int) Input {
	apps := []string{"a", "b"}
	cpus := []string{"250m", "500m", "1"}
	r := rand.New(rand.NewPCG(uint64(seed), 2))
	var pending []*corev1.Pod
	for i := range 40 {
		p := newPod(fmt.Sprintf("p%02d", i), cpus[r.IntN(len(cpus))], "1Gi", labelled(apps[r.IntN(len(apps))]))
		mixedKinds[r.IntN(len(mixedKinds))](p, apps[r.IntN(len(apps))])
		pending = append(pending, p)
	}
	in := Input{Pending: pending, Pools: []Pool{newPool("default", requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn,
		"m5.large", "m5.xlarge", "c5.large", "c5.xlarge"))}}
	if seed%2 == 1 {
		// With nodes that exist, pods are also weighed as the scheduler sees them, without the
		// plan's empty domains: the domains the claims bring and leave then count.
		in.Nodes = []*corev1.Node{zonedNode("n1", fake.ZoneA, "1", "2Gi"), zonedNode("n2", fake.ZoneB, "1", "2Gi")}
	}
	return in
}

// TestKeptStateSeesAntiAffinityGainItsKey: a pod on a claim with no zone yet repels s pods by
// zone, which counts for nothing while the claim has no zone, so InterPodAffinity skips them and
// their state is kept. When the claim settles into zone b, the repelling pod's term counts there:
// the kept state must give way to a fresh one, which refuses s in zone b.
func TestKeptStateSeesAntiAffinityGainItsKey(t *testing.T) {
	testPlanner(t) // builds sim
	ctx := context.Background()
	b1 := zonedNode("b1", fake.ZoneB, "4", "8Gi")
	snapshot := schedcache.NewSnapshot(nil, []*corev1.Node{b1})
	repelling := newPod("a", "100m", "100Mi", labelled("a"), awayFrom("s"))
	repelling.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey = corev1.LabelTopologyZone
	info, err := framework.NewPodInfo(repelling)
	if err != nil {
		t.Fatal(err)
	}
	nodeInfo := func(n *corev1.Node) fwk.NodeInfo {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		ni.AddPodInfo(info)
		return ni
	}
	claim := readyNode("c1", "4", "8Gi")
	before := nodeInfo(claim)
	sim.Use(snapshot, before)
	pf := prefilter.New(sim, false, []string{"s", "s"})
	if _, _, status := pf.Run(ctx, newPod("s1", "100m", "100Mi", labelled("s")), "s", -1, false); status != nil {
		t.Fatal(status.Message())
	}
	settled := claim.DeepCopy()
	settled.Labels[corev1.LabelTopologyZone] = fake.ZoneB
	after := nodeInfo(settled)
	pf.Relabelled(after, claim, 1)
	sim.Use(snapshot, after)
	s2 := newPod("s2", "100m", "100Mi", labelled("s"))
	state, _, status := pf.Run(ctx, s2, "s", -1, false)
	if status != nil {
		t.Fatal(status.Message())
	}
	b1Info, err := snapshot.NodeInfos().Get("b1")
	if err != nil {
		t.Fatal(err)
	}
	if sim.Filter(ctx, state, s2, b1Info).IsSuccess() {
		t.Fatal("s2 passes in zone b beside a pod whose anti-affinity repels it there")
	}
}
