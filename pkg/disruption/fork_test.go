package disruption

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// forkSeeds are the random clusters TestForkedProbesDecideAsRebuilt compares the two paths on.
const forkSeeds = 24

// randomCluster is a small fleet drawn from seed alone: one or two NodePools (one may launch
// spot), nodes of several types, zones and capacity types, some starting, leaving, drifted, not
// yet consolidatable or annotated do-not-disrupt, filled to a level drawn per cluster (full
// fleets are where probes are cut), with pods that spread over zones, repel each other per
// hostname, or are pinned to their node, and a PodDisruptionBudget that blocks one app.
func randomCluster(tb testing.TB, seed uint64) *cluster {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pools := []*karpv1.NodePool{newPool("default", budget("50%"))}
	if rng.IntN(2) == 0 {
		pools = append(pools, newPool("steady", onDemandOnly(), budget("3")))
	}
	c := newCluster(tb, pools...)
	types := []string{"m6i.large", "m6i.xlarge", "m6i.2xlarge", "c6i.xlarge", "c6i.2xlarge", "r6i.xlarge", "m6g.xlarge", "m5.2xlarge", "t3.xlarge"}
	apps := []string{"web", "api", "db", "cache"}
	fill := 0.3 + 0.75*rng.Float64()
	for i := range 6 + rng.IntN(14) {
		name := fmt.Sprintf("n%02d", i)
		pool := pools[rng.IntN(len(pools))]
		ct := karpv1.CapacityTypeOnDemand
		if pool.Name == "default" && rng.IntN(3) == 0 {
			ct = karpv1.CapacityTypeSpot
		}
		var opts []nodeOpt
		switch rng.IntN(14) {
		case 0:
			opts = append(opts, uninitialized())
		case 1:
			opts = append(opts, notConsolidatable())
		case 2:
			opts = append(opts, drifted(testNow.Add(-time.Duration(1+rng.IntN(90))*time.Minute)))
		case 3:
			opts = append(opts, claimDeleting())
		case 4:
			opts = append(opts, nodeAnnotated(karpv1.DoNotDisruptAnnotationKey, "true"))
		}
		n := c.node(name, pool.Name, offering{types[rng.IntN(len(types))], fake.Zones()[rng.IntN(3)], ct}, opts...)
		left := int64(float64(n.Status.Allocatable.Cpu().MilliValue()) * fill)
		solo := false
		for k := 0; left > 0 && k < 14; k++ {
			cpu := []int64{100, 250, 500, 1000, 1500}[rng.IntN(5)]
			mem := []string{"128Mi", "512Mi", "1Gi", "2Gi", "3Gi"}[rng.IntN(5)]
			app := apps[rng.IntN(len(apps))]
			podOpts := []podOpt{podLabeled("app", app)}
			switch rng.IntN(12) {
			case 0:
				podOpts = append(podOpts, zoneSpread(app))
			case 1:
				if !solo {
					solo = true
					podOpts = append(podOpts, podLabeled("solo", "true"), soloPerHost())
				}
			case 2:
				podOpts = append(podOpts, pinnedTo(name))
			}
			c.pod(fmt.Sprintf("p-%s-%02d", name, k), name, fmt.Sprintf("%dm", cpu), mem, podOpts...)
			left -= cpu
		}
	}
	if rng.IntN(3) == 0 {
		c.pdb("blocks-"+apps[0], "default", 0, selector("app", apps[0]))
	}
	return c
}

// zoneSpread spreads the app's pods over zones, at most one apart, as a rule.
func zoneSpread(app string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: selector("app", app)})
	}
}

// soloPerHost keeps pods labelled solo=true on hosts of their own.
func soloPerHost() podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: selector("solo", "true")}}}}
	}
}

// commandText is everything a command says, so that two compare exactly: what, why and how,
// the nodes, the savings, and each replacement's pool, pods, options, labels and daemons.
func commandText(cmd *Command) string {
	if cmd == nil {
		return "no command"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %v savings=%.6f\n", cmd.Method, cmd.Reason, cmd.Decision(), cmd.Nodes(), cmd.Savings)
	for _, r := range cmd.Replacements {
		fmt.Fprintf(&b, "  replacement in %s short=%q labels=%v\n", r.NodePool.Name, r.MinValuesShort, r.Labels)
		for _, p := range r.Pods {
			fmt.Fprintf(&b, "    pod %s/%s\n", p.Namespace, p.Name)
		}
		for _, d := range r.Daemons {
			fmt.Fprintf(&b, "    daemon %s\n", d.Name)
		}
		for _, o := range r.Options {
			fmt.Fprintf(&b, "    option %s %s %s %.6f\n", o.InstanceType.Name, o.Offering.Zone, o.Offering.CapacityType, o.Offering.PricePerHour)
		}
	}
	return b.String()
}

// The pass over one snapshot, with probes forked from it and hopeless ones cut, decides exactly
// as the pass that rebuilt the cluster for every probe: the same command from Decide, and the
// same answer for consolidating every candidate alone and every prefix that multi-node
// consolidation may weigh. A cut probe must be one the rebuilt path refuses.
func TestForkedProbesDecideAsRebuilt(t *testing.T) {
	ctx := context.Background()
	pl := testPlanner(t)
	var commands, probes, cut int
	kinds := map[string]int{}
	for seed := uint64(1); seed <= forkSeeds; seed++ {
		c := randomCluster(t, seed)
		forked, rebuilt := newProber(c.State, pl), &prober{state: c.State, planner: pl, rebuild: true}
		got, _ := decideWith(ctx, forked, nil, decideOpts(2))
		want, _ := decideWith(ctx, rebuilt, nil, decideOpts(2))
		if commandText(got) != commandText(want) {
			t.Errorf("seed %d: the forked pass decided\n%s\nthe rebuilt pass\n%s", seed, commandText(got), commandText(want))
		}
		if got != nil {
			commands++
			kinds[got.Method+" "+got.Decision()]++
		}

		// Every candidate alone and every prefix, on the same prober: each probe starts from
		// what the one before left, so a fork that was not reverted shows here.
		cands, _ := Candidates(c.State, nil)
		b, _, _ := poolBudgets(c.State, nil)
		fd := &decider{state: c.State, probe: forked, cands: cands, budgets: b, spotMin: 2}
		rd := &decider{state: c.State, probe: rebuilt, cands: cands, budgets: b, spotMin: 2}
		var sets [][]*Candidate
		under := fd.underutilized()
		for i, cand := range under {
			sets = append(sets, []*Candidate{cand}, under[:i+1])
		}
		for _, set := range sets {
			spot := len(set) == 1 && set[0].CapacityType() == karpv1.CapacityTypeSpot
			hopeless := forked.hopeless(set, priceOf(set), spot)
			got := fd.consolidate(ctx, set, "probe", spot)
			want := rd.consolidate(ctx, set, "probe", spot)
			probes++
			if hopeless {
				cut++
				if want != nil {
					t.Errorf("seed %d: removing %v was cut as hopeless, but the rebuilt path decides\n%s", seed, nodeSet(set), commandText(want))
				}
			}
			if commandText(got) != commandText(want) {
				t.Errorf("seed %d: removing %v: forked\n%s\nrebuilt\n%s", seed, slices.Sorted(maps.Keys(nodeSet(set))), commandText(got), commandText(want))
			}
			if want != nil {
				kinds["probe "+want.Decision()]++
			}
		}
	}
	t.Logf("%d seeds: %d commands decided, %d probes compared, %d cut as hopeless; %v", forkSeeds, commands, probes, cut, kinds)
	// The comparison means something only if the clusters make both paths decide, delete and
	// replace, and cut.
	if commands == 0 || cut == 0 || kinds["probe delete"] == 0 || kinds["probe replace"] == 0 {
		t.Errorf("the random clusters exercise too little: %d commands, %d cut, %v", commands, cut, kinds)
	}
}

// A removal whose pods ask for more than the other nodes have left, where no offering cheaper
// than the candidate holds the difference, is cut; one that a cheaper offering could hold is not
// (single-node consolidation may replace), nor one that the others' room could hold by sums.
func TestHopelessByResources(t *testing.T) {
	c := newCluster(t, newPool("default", onDemandOnly()))
	// Two m6i.2xlarge (8 vCPU, 32 GiB) nearly full, and an m6i.xlarge with 1.4 vCPU left.
	for _, n := range []string{"full-a", "full-b"} {
		c.node(n, "default", od2XLarge)
		c.pod(n+"-pod", n, "7", "26Gi")
	}
	c.node("roomy", "default", odXLarge)
	c.pod("roomy-pod", "roomy", "2500m", "1Gi")
	c.node("small", "default", odXLarge)
	c.pod("small-pod", "small", "100m", "128Mi")
	p := newProber(c.State, testPlanner(t))
	full := candidate(t, c.State, "full-a")
	// No offering of the catalog costs under a cent an hour.
	const cent = 0.01
	if !p.hopeless([]*Candidate{full}, cent, false) {
		t.Errorf("full-a's 7 vCPU fit neither the others' room nor any offering under $0.01/h, yet it was not cut")
	}
	if p.hopeless([]*Candidate{full}, full.Price, false) {
		t.Errorf("full-a's pod fits offerings cheaper than its m6i.2xlarge (an m6g.2xlarge), yet the probe was cut")
	}
	if !p.hopeless([]*Candidate{full, candidate(t, c.State, "full-b")}, cent, false) {
		t.Errorf("full-a and full-b together were not cut")
	}
	if p.hopeless([]*Candidate{candidate(t, c.State, "small")}, 0, false) {
		t.Errorf("small's pod fits the others' room by sums, yet the probe was cut")
	}
	if rebuilt := (&prober{state: c.State, planner: testPlanner(t), rebuild: true}); rebuilt.hopeless([]*Candidate{full}, cent, false) {
		t.Errorf("the rebuilt path cut a probe; it is the reference and cuts none")
	}
}
