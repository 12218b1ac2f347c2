package planner

import (
	"context"
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
)

// owned gives the pod a controller owner, as a Deployment's pods have.
func owned(kind, name string) podOpt {
	return func(p *corev1.Pod) {
		controller := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name,
			UID: types.UID("uid-" + strings.ToLower(kind) + "-" + name), Controller: &controller}}
	}
}

type spreadOpt func(*corev1.TopologySpreadConstraint)

// spread adds a topology spread constraint over the pods labelled app=app.
func spread(app, key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, opts ...spreadOpt) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: selecting(app)}
		for _, o := range opts {
			o(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func minDomains(n int32) spreadOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.MinDomains = &n }
}

func affinityPolicy(p corev1.NodeInclusionPolicy) spreadOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &p }
}

func taintsPolicy(p corev1.NodeInclusionPolicy) spreadOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &p }
}

// TestConstraintTopologySpread plans the replicas of one app under a spread constraint and counts
// them per domain, every claim settled into one domain; pods already running count too.
func TestConstraintTopologySpread(t *testing.T) {
	const app = "web"
	zone, ct := corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey
	dns := corev1.DoNotSchedule
	a, b, c := fake.ZoneA, fake.ZoneB, fake.ZoneC
	twoZones := requireNodes([]corev1.NodeSelectorRequirement{match(zone, corev1.NodeSelectorOpIn, a, b)})
	// A node in zone a, full, running one replica: it counts, but takes no more pods.
	full := zonedNode("full", a, "500m", "1Gi")
	one := []*corev1.Pod{clusterview.OnNode(newPod("running", "500m", "512Mi", labelled(app)), "full")}
	// The same node, tainted; the replica on it tolerates the taint.
	taintedFull := full.DeepCopy()
	taintedFull.Spec.Taints = []corev1.Taint{{Key: dedicated, Effect: corev1.TaintEffectNoSchedule}}
	tolerant := []*corev1.Pod{clusterview.OnNode(newPod("running", "500m", "512Mi", labelled(app), tolerates(dedicated)), "full")}
	// An empty node in zone b: a domain with no replica for the scheduler too.
	emptyB := zonedNode("empty-b", b, "8", "32Gi")
	inA := nodeSelector(zone, a)
	cases := []struct {
		name    string
		pending []*corev1.Pod
		nodes   []*corev1.Node
		running []*corev1.Pod
		key     string
		// want counts the pending pods per domain of key; unplaceable is how many are left over.
		want        map[string]int
		unplaceable int
		skip        string
	}{
		{name: "zone", pending: replicas(6, app, "500m", "512Mi", spread(app, zone, 1, dns)), key: zone,
			want: map[string]int{a: 2, b: 2, c: 2}},
		{name: "capacity type", pending: replicas(4, app, "500m", "512Mi", spread(app, ct, 1, dns)), key: ct,
			want: map[string]int{karpv1.CapacityTypeSpot: 2, karpv1.CapacityTypeOnDemand: 2}},
		{name: "zone, with a replica running in zone a", pending: replicas(4, app, "500m", "512Mi", spread(app, zone, 1, dns)),
			nodes: []*corev1.Node{full}, running: one, key: zone, want: map[string]int{b: 2, c: 2}},
		{name: "minDomains 3 over three zones", pending: replicas(3, app, "500m", "512Mi", spread(app, zone, 1, dns, minDomains(3))), key: zone,
			want: map[string]int{a: 1, b: 1, c: 1}},
		// Two zones only: two domains below minDomains count as a global minimum of 0.
		{name: "minDomains 3 over two zones", pending: replicas(3, app, "500m", "512Mi", twoZones, spread(app, zone, 1, dns, minDomains(3))), key: zone,
			want: map[string]int{a: 1, b: 1}, unplaceable: 1},
		{name: "two zones without minDomains", pending: replicas(3, app, "500m", "512Mi", twoZones, spread(app, zone, 1, dns)), key: zone,
			want: map[string]int{a: 2, b: 1}},
		// The pod must go to zone a, which has a replica already. Honor counts zone a only
		// (the pod's node selector): no skew. Ignore counts zone b at 0 where a node is there:
		// skew 2. Where none is, the empty domains of zones b and c refuse zone a too, but the
		// scheduler knows zone a alone and takes the pod there, so the plan does (domains.go).
		{name: "nodeAffinityPolicy Honor", pending: replicas(1, app, "500m", "512Mi", inA, spread(app, zone, 1, dns)),
			nodes: []*corev1.Node{full, emptyB}, running: one, key: zone, want: map[string]int{a: 1}},
		{name: "nodeAffinityPolicy Ignore", pending: replicas(1, app, "500m", "512Mi", inA, spread(app, zone, 1, dns, affinityPolicy(corev1.NodeInclusionPolicyIgnore))),
			nodes: []*corev1.Node{full, emptyB}, running: one, key: zone, want: map[string]int{}, unplaceable: 1},
		{name: "nodeAffinityPolicy Ignore, no node in zone b", pending: replicas(1, app, "500m", "512Mi", inA, spread(app, zone, 1, dns, affinityPolicy(corev1.NodeInclusionPolicyIgnore))),
			nodes: []*corev1.Node{full}, running: one, key: zone, want: map[string]int{a: 1}},
		{name: "ScheduleAnyway is not refused", pending: replicas(1, app, "500m", "512Mi", inA, spread(app, zone, 1, corev1.ScheduleAnyway, affinityPolicy(corev1.NodeInclusionPolicyIgnore))),
			nodes: []*corev1.Node{full, emptyB}, running: one, key: zone, want: map[string]int{a: 1}},
		// The replica in zone a runs on a node the pod does not tolerate: Honor leaves it uncounted.
		{name: "nodeTaintsPolicy Ignore", pending: replicas(1, app, "500m", "512Mi", inA, spread(app, zone, 1, dns, affinityPolicy(corev1.NodeInclusionPolicyIgnore))),
			nodes: []*corev1.Node{taintedFull, emptyB}, running: tolerant, key: zone, want: map[string]int{}, unplaceable: 1},
		{name: "nodeTaintsPolicy Honor", pending: replicas(1, app, "500m", "512Mi", inA,
			spread(app, zone, 1, dns, affinityPolicy(corev1.NodeInclusionPolicyIgnore), taintsPolicy(corev1.NodeInclusionPolicyHonor))),
			nodes: []*corev1.Node{taintedFull, emptyB}, running: tolerant, key: zone, want: map[string]int{a: 1}},
		// Karpenter treats ScheduleAnyway as required until it cannot be met (preferences.go).
		{name: "ScheduleAnyway spreads when it can", pending: replicas(3, app, "500m", "512Mi", spread(app, zone, 1, corev1.ScheduleAnyway)), key: zone,
			want: map[string]int{a: 1, b: 1, c: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			knownBug(t, tc.skip)
			in := Input{Pending: tc.pending, Nodes: tc.nodes, Pods: tc.running, Pools: []Pool{newPool("default")}}
			plan := testPlanner(t).Plan(context.Background(), in)
			if len(plan.Unplaceable) != tc.unplaceable || len(plan.FitsExisting) != 0 {
				t.Fatalf("want %d pods unplaceable, none on existing nodes; got %s", tc.unplaceable, summary(plan))
			}
			for _, u := range plan.Unplaceable {
				reasonContains(t, plan, u.Pod, "didn't match pod topology spread constraints")
			}
			if got := podsPerDomain(t, plan, tc.key); !maps.Equal(got, tc.want) {
				t.Errorf("pods per %s: %v, want %v; %s", tc.key, got, tc.want, summary(plan))
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestConstraintHostnameSpread: with maxSkew 1 over hostnames, every new node is a domain with
// no replica yet, so each claim holds one.
func TestConstraintHostnameSpread(t *testing.T) {
	pending := replicas(4, "web", "500m", "512Mi", spread("web", corev1.LabelHostname, 1, corev1.DoNotSchedule))
	in := Input{Pending: pending, Pools: []Pool{newPool("default")}}
	plan := testPlanner(t).Plan(context.Background(), in)
	placedOnce(t, plan, pending)
	if len(plan.Claims) != 4 {
		t.Errorf("want one claim per replica; got %s", summary(plan))
	}
	verifyPlan(t, sim, in, plan)
}

// TestConstraintDefaultSpread: pods without constraints of their own get the profile's default
// constraints, over the pods of the same ReplicaSet. kube-scheduler's are ScheduleAnyway: they do
// not refuse pods, which pack. A profile whose default is DoNotSchedule spreads them.
func TestConstraintDefaultSpread(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-replicaset-web"},
		Spec:       appsv1.ReplicaSetSpec{Selector: selecting("web")},
	}
	strict := func(p *config.KubeSchedulerProfile) {
		for i, pc := range p.PluginConfig {
			if args, ok := pc.Args.(*config.PodTopologySpreadArgs); ok {
				args = args.DeepCopy()
				args.DefaultingType = config.ListDefaulting
				args.DefaultConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}
				p.PluginConfig[i].Args = args
			}
		}
	}
	cases := []struct {
		name    string
		profile func(*config.KubeSchedulerProfile)
		claims  int
		perZone map[string]int
	}{
		{name: "kube-scheduler's defaults", claims: 1},
		{name: "DoNotSchedule by zone", profile: strict, perZone: map[string]int{fake.ZoneA: 2, fake.ZoneB: 2, fake.ZoneC: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := offlineSim(t, tc.profile, rs)
			pending := replicas(6, "web", "500m", "512Mi", owned("ReplicaSet", "web"))
			in := Input{Pending: pending, Pools: []Pool{newPool("default")}}
			plan := NewPlanner(s).Plan(context.Background(), in)
			placedOnce(t, plan, pending)
			if tc.claims > 0 && len(plan.Claims) != tc.claims {
				t.Errorf("want %d claims; got %s", tc.claims, summary(plan))
			}
			if tc.perZone != nil {
				if got := podsPerDomain(t, plan, corev1.LabelTopologyZone); !maps.Equal(got, tc.perZone) {
					t.Errorf("pods per zone: %v, want %v", got, tc.perZone)
				}
			}
			verifyPlan(t, s, in, plan)
		})
	}
}

// TestScheduleAnywaySpreadKeepsTheOtherSpreadsNodes: PodTopologySpread counts only the nodes
// that carry every DoNotSchedule constraint's key. Made DoNotSchedule, a ScheduleAnyway spread
// over a key the running nodes lack leaves them out of the zone spread's counts too: the shape
// sees no replica in zone a where the scheduler sees two beside an empty zone b, and a pool that
// launches in zone a only can hold no third.
func TestScheduleAnywaySpreadKeepsTheOtherSpreadsNodes(t *testing.T) {
	const app, rack = "web", "example.com/rack"
	zone := corev1.LabelTopologyZone
	var nodes []*corev1.Node
	var running []*corev1.Pod
	for _, name := range []string{"a1", "a2"} {
		n := zonedNode(name, fake.ZoneA, "500m", "1Gi")
		nodes = append(nodes, n)
		running = append(running, clusterview.OnNode(newPod("running-"+name, "500m", "512Mi", labelled(app)), name))
	}
	nodes = append(nodes, zonedNode("b1", fake.ZoneB, "100m", "1Gi")) // zone b is a domain, with no room
	pod := newPod("web", "500m", "512Mi", labelled(app), spread(app, zone, 1, corev1.DoNotSchedule), spread(app, rack, 1, corev1.ScheduleAnyway))
	pool := newPool("rack-r1", requirement(zone, corev1.NodeSelectorOpIn, fake.ZoneA))
	pool.NodePool.Spec.Template.Labels = map[string]string{rack: "r1"}
	in := Input{Pending: []*corev1.Pod{pod}, Nodes: nodes, Pods: running, Pools: []Pool{pool}}
	plan := testPlanner(t).Plan(context.Background(), in)
	if len(plan.Unplaceable) != 1 {
		t.Errorf("want the pod unplaceable, a third replica in zone a beside an empty zone b; got %s", summary(plan))
	}
	verifyPlan(t, sim, in, plan)
}
