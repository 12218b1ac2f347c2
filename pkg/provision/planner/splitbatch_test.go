package planner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

// A Deployment's replicas reach the planner in one batch or in several: the batch closes when
// no pod has come for a few milliseconds, and a loaded scheduler, or a scale-up in steps, spreads
// them out. The second batch then finds the first one's claims in flight, as NodeClaims that have
// not launched. TestSplitBatchesPlanAsOne plans seeded, random workloads in two such batches and
// holds the second to what one plan of both would keep: a zone spread within its skew over the
// zones the pool launches in, replicas that must not share a node on different nodes, and
// replicas that prefer other zones than their siblings' in different zones, while zones last.
// CI found the last one broken (TestAPodWaitsForTheNodeLaunchedForIt); this test then found the
// first broken too, a review the spread that prefers a zone.

// splitKind is the one constraint the replicas of an app share.
type splitKind int

const (
	plainReplicas splitKind = iota
	zoneSpread1
	zoneSpread2
	preferOtherZones
	requireOtherNodes
	// preferZoneAndSpread prefers zone a and spreads over zones: the shape that requires zone a
	// sees one zone and no skew, so the pod must pass beside it as it is, with the empty
	// domains (preferences.go).
	preferZoneAndSpread
	splitKinds
)

func (k splitKind) opt(app string) podOpt {
	switch k {
	case zoneSpread1, zoneSpread2:
		return spread(app, corev1.LabelTopologyZone, int32(k-zoneSpread1+1), corev1.DoNotSchedule)
	case preferOtherZones:
		return preferring(nil, []corev1.PodAffinityTerm{podTerm(app, corev1.LabelTopologyZone)})
	case requireOtherNodes:
		return with(nil, []corev1.PodAffinityTerm{podTerm(app, corev1.LabelHostname)})
	case preferZoneAndSpread:
		prefer, spreads := preferNodes(match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, fake.ZoneA)), zoneSpread1.opt(app)
		return func(p *corev1.Pod) { prefer(p); spreads(p) }
	}
	return func(*corev1.Pod) {}
}

type splitApp struct {
	name    string
	kind    splitKind
	pods    []*corev1.Pod
	inFirst int // how many of pods come in the first batch
}

func splitWorkload(seed uint64) []splitApp {
	r := rand.New(rand.NewPCG(seed, 0x5b1))
	sizes := [][2]string{{"100m", "128Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"2", "3Gi"}}
	apps := make([]splitApp, 1+r.IntN(3))
	for i := range apps {
		kind := splitKind(r.IntN(int(splitKinds)))
		n := 2 + r.IntN(6)
		if kind == preferOtherZones {
			n = 2 + r.IntN(2) // no more than the three zones
		}
		size := sizes[r.IntN(len(sizes))]
		name := fmt.Sprintf("app%d", i)
		apps[i] = splitApp{name: name, kind: kind, pods: replicas(n, name, size[0], size[1], kind.opt(name)), inFirst: r.IntN(n)}
	}
	if slices.IndexFunc(apps, func(a splitApp) bool { return a.inFirst > 0 }) < 0 {
		apps[0].inFirst = 1
	}
	return apps
}

// splitSeedsEnv sets how many seeds TestSplitBatchesPlanAsOne runs (default 100, a few seconds);
// 600 ran clean when it was written.
const splitSeedsEnv = "TAILOR_SPLIT_SEEDS"

func TestSplitBatchesPlanAsOne(t *testing.T) {
	pool := newPool("default")
	typesByPool := map[string][]*cloud.InstanceType{"default": pool.InstanceTypes}
	seeds := uint64(100)
	if n, err := strconv.ParseUint(os.Getenv(splitSeedsEnv), 10, 64); err == nil {
		seeds = n
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		apps := splitWorkload(seed)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			var first, second, all []*corev1.Pod
			for _, a := range apps {
				first = append(first, a.pods[:a.inFirst]...)
				second = append(second, a.pods[a.inFirst:]...)
				all = append(all, a.pods...)
			}
			plan1 := testPlanner(t).Plan(context.Background(), Input{Pending: first, Pools: []Pool{pool}})
			if len(plan1.Unplaceable) > 0 {
				t.Fatalf("first batch: %s", summary(plan1))
			}
			cluster := &clusterview.Cluster{Pods: all, Planned: map[types.UID]string{}}
			for i, pc := range plan1.Claims {
				nc := nodeclaim.New(pc)
				nc.Name = fmt.Sprintf("first-%d", i)
				cluster.Claims = append(cluster.Claims, nc)
				for _, p := range pc.Pods {
					cluster.Planned[p.UID] = nc.Name
				}
			}
			v := cluster.View(typesByPool)
			in := Input{Pending: second, Nodes: v.Nodes, Pods: v.Pods, InFlight: v.InFlight, Unsettled: v.Unsettled, Pools: []Pool{pool}}
			plan2 := testPlanner(t).Plan(context.Background(), in)
			if len(plan2.Unplaceable) > 0 || len(plan2.FitsExisting) > 0 {
				t.Fatalf("second batch: %s", summary(plan2))
			}
			where := placements(t, v, plan2)
			for _, a := range apps {
				checkSplitApp(t, a, where)
			}
			verifyPlan(t, sim, in, plan2)
		})
	}
}

// landing is the node a pod ends on, and its zone ("" while its claim may launch in several).
type landing struct{ node, zone string }

// placements says where each pod of both batches is: the first batch's on the stand-ins of their
// claims, the second's on those or on the claims the second plan opened.
func placements(t *testing.T, v *clusterview.View, plan2 *Plan) map[string]landing {
	t.Helper()
	byName := map[string]*corev1.Node{}
	for _, n := range v.Nodes {
		byName[n.Name] = n
	}
	out := map[string]landing{}
	for _, p := range v.Pods {
		n := byName[p.Spec.NodeName]
		out[p.Name] = landing{node: n.Name, zone: n.Labels[corev1.LabelTopologyZone]}
	}
	for name, claim := range v.InFlight {
		for _, p := range plan2.InFlight[claim] {
			out[p.Name] = landing{node: name, zone: byName[name].Labels[corev1.LabelTopologyZone]}
		}
	}
	for i, pc := range plan2.Claims {
		zone := ""
		if vs := valuesOf(pc, corev1.LabelTopologyZone); len(vs) == 1 {
			zone = vs[0]
		}
		for _, p := range pc.Pods {
			out[p.Name] = landing{node: fmt.Sprintf("second-%d", i), zone: zone}
		}
	}
	return out
}

// checkSplitApp fails the test where the app's replicas, both batches together, break what one
// plan of them keeps.
func checkSplitApp(t *testing.T, a splitApp, where map[string]landing) {
	t.Helper()
	perZone := map[string]int{fake.ZoneA: 0, fake.ZoneB: 0, fake.ZoneC: 0}
	nodes := map[string]int{}
	for _, p := range a.pods {
		at, ok := where[p.Name]
		if !ok {
			t.Fatalf("%s (%d in the first batch) is placed nowhere", p.Name, a.inFirst)
		}
		perZone[at.zone]++
		nodes[at.node]++
	}
	maxSkew := 1
	if a.kind == zoneSpread2 {
		maxSkew = 2
	}
	switch a.kind {
	case zoneSpread1, zoneSpread2, preferZoneAndSpread:
		if perZone[""] > 0 {
			t.Errorf("%s: %d replicas of a zone spread on claims that may launch in any zone", a.name, perZone[""])
		}
		counts := []int{perZone[fake.ZoneA], perZone[fake.ZoneB], perZone[fake.ZoneC]}
		if skew := slices.Max(counts) - slices.Min(counts); skew > maxSkew {
			t.Errorf("%s: replicas per zone %v (%d in the first batch): skew %d over the pool's zones", a.name, counts, a.inFirst, skew)
		}
	case preferOtherZones:
		for z, n := range perZone {
			if n > 1 {
				t.Errorf("%s: %d of %d replicas in zone %q (%d in the first batch), though each prefers another zone than its siblings'", a.name, n, len(a.pods), z, a.inFirst)
			}
		}
	case requireOtherNodes:
		for node, n := range nodes {
			if n > 1 {
				t.Errorf("%s: %d replicas on %s, which must not share a node", a.name, n, node)
			}
		}
	}
}
