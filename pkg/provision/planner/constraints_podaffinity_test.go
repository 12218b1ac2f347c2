package planner

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
)

func podTerm(app, key string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{LabelSelector: selecting(app), TopologyKey: key}
}

// with sets the pod's required (anti-)affinity terms, keeping the other kind.
func with(affinity, anti []corev1.PodAffinityTerm) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{}
		if affinity != nil {
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: affinity}
		}
		if anti != nil {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: anti}
		}
	}
}

func preferring(affinity, anti []corev1.PodAffinityTerm) podOpt {
	weighted := func(terms []corev1.PodAffinityTerm) []corev1.WeightedPodAffinityTerm {
		var out []corev1.WeightedPodAffinityTerm
		for _, t := range terms {
			out = append(out, corev1.WeightedPodAffinityTerm{Weight: 100, PodAffinityTerm: t})
		}
		return out
	}
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{}
		if affinity != nil {
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: weighted(affinity)}
		}
		if anti != nil {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: weighted(anti)}
		}
	}
}

// TestConstraintPodAffinity: required pod affinity and anti-affinity, against pods placed earlier
// in the same plan and against pods running on existing nodes, counted per zone. (Hostname terms
// between pending pods are TestPlanInterPodAffinity's.)
func TestConstraintPodAffinity(t *testing.T) {
	zone, host := corev1.LabelTopologyZone, corev1.LabelHostname
	a, b, c := fake.ZoneA, fake.ZoneB, fake.ZoneC
	// A node in zone b, full, running db; a node in zone a with room, running a pod that keeps
	// web out of its zone.
	dbNode := zonedNode("db-node", b, "1", "2Gi")
	db := clusterview.OnNode(newPod("db", "1", "2Gi", labelled("db")), "db-node")
	roomy := zonedNode("roomy", a, "8", "32Gi")
	guard := clusterview.OnNode(newPod("guard", "500m", "512Mi", labelled("guard"), with(nil, []corev1.PodAffinityTerm{podTerm("web", zone)})), "roomy")
	cases := []struct {
		name    string
		pending []*corev1.Pod
		nodes   []*corev1.Node
		running []*corev1.Pod
		// zones are the zones the claims settle in, sorted; "*" stands for any one zone, the same
		// for every "*". unplaceable are the pods left over; fitsExisting the pods that go to
		// existing nodes.
		zones        []string
		unplaceable  []string
		fitsExisting int
	}{
		// The first replica may go anywhere (it matches its own term); the others follow it, one
		// per node.
		{name: "affinity by zone between pending pods",
			pending: replicas(3, "web", "1", "1Gi", with([]corev1.PodAffinityTerm{podTerm("web", zone)}, []corev1.PodAffinityTerm{podTerm("web", host)})),
			zones:   []string{"*", "*", "*"}},
		{name: "anti-affinity by zone between pending pods", pending: replicas(4, "web", "1", "1Gi", with(nil, []corev1.PodAffinityTerm{podTerm("web", zone)})),
			zones: []string{a, b, c}, unplaceable: []string{"web-3"}},
		{name: "affinity by zone to a running pod", pending: replicas(2, "web", "1", "1Gi", with([]corev1.PodAffinityTerm{podTerm("db", zone)}, nil)),
			nodes: []*corev1.Node{dbNode}, running: []*corev1.Pod{db}, zones: []string{b}},
		{name: "anti-affinity by zone to a running pod", pending: replicas(2, "web", "1", "1Gi", with(nil, []corev1.PodAffinityTerm{podTerm("db", zone)})),
			nodes: []*corev1.Node{dbNode}, running: []*corev1.Pod{db}, zones: []string{"not " + b}},
		// db's node is full and no new node will run db.
		{name: "affinity by hostname to a pod on a full node", pending: replicas(1, "web", "1", "1Gi", with([]corev1.PodAffinityTerm{podTerm("db", host)}, nil)),
			nodes: []*corev1.Node{dbNode}, running: []*corev1.Pod{db}, unplaceable: []string{"web-0"}},
		{name: "affinity to a pod that runs nowhere", pending: replicas(1, "web", "1", "1Gi", with([]corev1.PodAffinityTerm{podTerm("db", zone)}, nil)),
			unplaceable: []string{"web-0"}},
		// A running pod's anti-affinity keeps web off its node, roomy as it is, and out of its zone.
		{name: "a running pod's anti-affinity", pending: replicas(1, "web", "1", "1Gi"),
			nodes: []*corev1.Node{roomy}, running: []*corev1.Pod{guard}, zones: []string{"not " + a}},
		{name: "a running pod's anti-affinity spares other pods", pending: replicas(1, "api", "1", "1Gi"),
			nodes: []*corev1.Node{roomy}, running: []*corev1.Pod{guard}, fitsExisting: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pending: tc.pending, Nodes: tc.nodes, Pods: tc.running, Pools: []Pool{newPool("default")}}
			plan := testPlanner(t).Plan(context.Background(), in)
			var unplaceable []string
			for _, u := range plan.Unplaceable {
				unplaceable = append(unplaceable, u.Pod.Name)
				reasonContains(t, plan, u.Pod, "affinity")
			}
			if !slices.Equal(unplaceable, tc.unplaceable) || len(plan.FitsExisting) != tc.fitsExisting {
				t.Fatalf("want %v unplaceable and %d on existing nodes; got %s", tc.unplaceable, tc.fitsExisting, summary(plan))
			}
			var zones []string
			for _, pc := range plan.Claims {
				zones = append(zones, settledOn(t, pc, zone))
			}
			slices.Sort(zones)
			if !zonesMatch(zones, tc.zones) {
				t.Errorf("claims settle in zones %v, want %v; %s", zones, tc.zones, summary(plan))
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// zonesMatch compares zones with want, where "*" is one zone, the same for every "*", and
// "not z" any zone but z.
func zonesMatch(zones, want []string) bool {
	if len(zones) != len(want) {
		return false
	}
	star := ""
	for i, w := range want {
		switch {
		case w == "*":
			if star == "" {
				star = zones[i]
			}
			if zones[i] != star {
				return false
			}
		case strings.HasPrefix(w, "not "):
			if zones[i] == strings.TrimPrefix(w, "not ") {
				return false
			}
		case zones[i] != w:
			return false
		}
	}
	return true
}

// TestConstraintPreferredPodAffinity: Karpenter treats preferred (anti-)affinity as required
// while it can be met, and drops it when it cannot; the pod is placed either way.
func TestConstraintPreferredPodAffinity(t *testing.T) {
	dbNode := zonedNode("db-node", fake.ZoneB, "1", "2Gi")
	db := clusterview.OnNode(newPod("db", "1", "2Gi", labelled("db")), "db-node")
	zone, host := corev1.LabelTopologyZone, corev1.LabelHostname
	cases := []struct {
		name    string
		pending []*corev1.Pod
		nodes   []*corev1.Node
		running []*corev1.Pod
		// perZone counts the pods per zone the claims settle in; claims is how many there are
		// (0: not checked).
		perZone map[string]int
		claims  int
		skip    string
	}{
		{name: "anti-affinity by hostname honoured", pending: replicas(3, "web", "1", "1Gi", preferring(nil, []corev1.PodAffinityTerm{podTerm("web", host)})),
			claims: 3},
		{name: "affinity by zone to a running pod honoured", pending: replicas(1, "web", "1", "1Gi", preferring([]corev1.PodAffinityTerm{podTerm("db", zone)}, nil)),
			nodes: []*corev1.Node{dbNode}, running: []*corev1.Pod{db}, claims: 1, perZone: map[string]int{fake.ZoneB: 1}},
		{name: "affinity to a pod that runs nowhere relaxed", pending: replicas(2, "web", "1", "1Gi", preferring([]corev1.PodAffinityTerm{podTerm("db", zone)}, nil)),
			claims: 1},
		// Four replicas, three zones: at least one cannot have its preference; all are placed.
		{name: "anti-affinity by zone relaxed", pending: replicas(4, "web", "1", "1Gi", preferring(nil, []corev1.PodAffinityTerm{podTerm("web", zone)}))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			knownBug(t, tc.skip)
			in := Input{Pending: tc.pending, Nodes: tc.nodes, Pods: tc.running, Pools: []Pool{newPool("default")}}
			plan := testPlanner(t).Plan(context.Background(), in)
			placedOnce(t, plan, tc.pending)
			if tc.claims > 0 && len(plan.Claims) != tc.claims {
				t.Errorf("want %d claims; got %s", tc.claims, summary(plan))
			}
			if tc.perZone != nil {
				if got := podsPerDomain(t, plan, zone); !maps.Equal(got, tc.perZone) {
					t.Errorf("pods per zone %v, want %v", got, tc.perZone)
				}
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestPreferredPodAffinityKeepsTheFirstPodRule: InterPodAffinity lets a pod go anywhere when no
// pod matches all of its required affinity terms and it matches them itself (the first pod of
// a group). A preferred term made required can be the one that no running pod matches, so the
// shape would pass in every zone while the pod as it is must join the zone of the pod its own
// term matches: the rollout of a self-affine Deployment that prefers its own version.
func TestPreferredPodAffinityKeepsTheFirstPodRule(t *testing.T) {
	zone := corev1.LabelTopologyZone
	versioned := func(version string) podOpt {
		return func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web", "ver": version} }
	}
	sameVersion := corev1.PodAffinityTerm{TopologyKey: zone,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "ver": "v2"}}}
	full := zonedNode("full", fake.ZoneB, "1", "2Gi")
	old := clusterview.OnNode(newPod("web-v1", "1", "2Gi", versioned("v1")), full.Name)
	pod := newPod("web-v2", "1", "2Gi", versioned("v2"), with([]corev1.PodAffinityTerm{podTerm("web", zone)}, nil))
	pod.Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: sameVersion}}
	in := Input{Pending: []*corev1.Pod{pod}, Nodes: []*corev1.Node{full}, Pods: []*corev1.Pod{old}, Pools: []Pool{newPool("default")}}
	plan := testPlanner(t).Plan(context.Background(), in)
	pc := onlyClaim(t, plan, pod)
	if zones := valuesOf(pc, zone); !slices.Equal(zones, []string{fake.ZoneB}) {
		t.Errorf("the claim may launch in %v; the pod must join web in %s", zones, fake.ZoneB)
	}
	verifyPlan(t, sim, in, plan)
}

// TestPreferencesWeighClaimsInFlightAsNewCapacity: a pod's preferences are honoured on capacity
// in flight as on the claims its own plan opens, so that a Deployment planned in two batches ends
// as one planned in one. A replica that prefers another zone than its sibling's, planned after
// the sibling's claim was created, gets a claim of its own in another zone; it takes room on the
// sibling's claim only when no new capacity could honour the preference. A ready node it fits is
// another matter: the scheduler binds it there whatever it prefers, so the plan says so.
func TestPreferencesWeighClaimsInFlightAsNewCapacity(t *testing.T) {
	zone, host := corev1.LabelTopologyZone, corev1.LabelHostname
	apart := func(key string) podOpt { return preferring(nil, []corev1.PodAffinityTerm{podTerm("web", key)}) }
	for _, tc := range []struct {
		name     string
		key      string
		opt      podOpt
		inFlight bool
		pool     Pool
		// Where the pending replica should go: onto the claim in flight, onto the ready node, or
		// onto a new claim, in another zone than its sibling's when the preference is by zone.
		wantInFlight, wantExisting, wantNew bool
	}{
		{name: "zone preference opens a claim in another zone", key: zone, opt: apart(zone), inFlight: true, pool: newPool("default"), wantNew: true},
		{name: "hostname preference opens a claim", key: host, opt: apart(host), inFlight: true, pool: newPool("default"), wantNew: true},
		// The zones the pool may launch in are domains of the spread, as for the claims of one
		// plan (domains.go), though only the sibling's claim is known yet.
		{name: "zone spread opens a claim in another zone", key: zone, opt: spread("web", zone, 1, corev1.DoNotSchedule), inFlight: true,
			pool: newPool("default"), wantNew: true},
		{name: "preferred zone spread opens a claim in another zone", key: zone, opt: spread("web", zone, 1, corev1.ScheduleAnyway), inFlight: true,
			pool: newPool("default"), wantNew: true},
		{name: "relaxed onto the claim in flight when no zone can honour it", key: zone, opt: apart(zone), inFlight: true,
			pool: newPool("default", requirement(zone, corev1.NodeSelectorOpIn, fake.ZoneA)), wantInFlight: true},
		{name: "zone spread onto the claim in flight when the pool has one zone", key: zone, opt: spread("web", zone, 1, corev1.DoNotSchedule), inFlight: true,
			pool: newPool("default", requirement(zone, corev1.NodeSelectorOpIn, fake.ZoneA)), wantInFlight: true},
		{name: "a ready node takes it as the scheduler would", key: zone, opt: apart(zone), pool: newPool("default"), wantExisting: true},
		// The claim in flight says no capacity type yet: a shape that requires spot would
		// refuse it whatever it launches as.
		{name: "a node-affinity preference alone takes the room in flight as it is", key: zone,
			opt: preferNodes(match(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot)), inFlight: true,
			pool: newPool("default"), wantInFlight: true},
		{name: "a ready node takes a spreading pod as the scheduler would", key: zone, opt: spread("web", zone, 1, corev1.DoNotSchedule),
			pool: newPool("default"), wantExisting: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := zonedNode("first", fake.ZoneA, "2", "4Gi")
			opts := []podOpt{tc.opt}
			sibling := clusterview.OnNode(newPod("web-0", "100m", "128Mi", append([]podOpt{labelled("web")}, opts...)...), "first")
			pending := newPod("web-1", "100m", "128Mi", append([]podOpt{labelled("web")}, opts...)...)
			in := Input{Pending: []*corev1.Pod{pending}, Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{sibling}, Pools: []Pool{tc.pool}}
			if tc.inFlight {
				in.InFlight = map[string]string{"first": "claim-1"}
			}
			plan := testPlanner(t).Plan(context.Background(), in)
			if got := len(plan.InFlight["claim-1"]) == 1; got != tc.wantInFlight {
				t.Errorf("on the claim in flight: %v, want %v; plan %s", got, tc.wantInFlight, summary(plan))
			}
			if got := len(plan.FitsExisting) == 1; got != tc.wantExisting {
				t.Errorf("on the ready node: %v, want %v; plan %s", got, tc.wantExisting, summary(plan))
			}
			if !tc.wantNew {
				if len(plan.Claims) != 0 {
					t.Errorf("want no new claim; got %s", summary(plan))
				}
				return
			}
			placedOnce(t, plan, in.Pending)
			pc := onlyClaim(t, plan, pending)
			if tc.key == zone {
				if z := settledOn(t, pc, zone); z == fake.ZoneA {
					t.Errorf("the new claim settled in %s, the sibling's zone", z)
				}
			}
			verifyPlan(t, sim, in, plan)
		})
	}
}
