package disruption

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tailor-sh/tailor/internal/cputime"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

const (
	benchNodes       = 1000
	benchPodsPerNode = 10
)

// benchSizes are the fleets a pass is timed on: issue 35's 5,000 nodes and 50,000 pods beside the
// 1,000 the figures were first taken on. The rebuild path runs on the smaller only: at 5,000 it
// takes minutes a pass.
var benchSizes = []int{benchNodes, 5 * benchNodes}

// benchCluster is nodes (1,000 in the text below) on-demand nodes of 8 vCPU and 32 GiB, four
// types across the three zones, each holding 10 pods whose requests cycle through the sizes of
// Karpenter's scheduling benchmark (as pkg/provision's mixedPods): 6.7 vCPU a node, about 85% of
// its allocatable, and 8 to 15 GiB of memory. Every node is initialized and consolidatable; the
// pool keeps the default budget (10%, so 100 nodes) and launches on demand only, so a replacement
// must win on the type, not by turning to spot. Nothing is random: the same cluster every run.
//
// The pods of one size are the replicas of one Deployment (the same labels), so that the fleet
// has 12 shapes of node (see twins); with distinct, every pod has a label of its own instead,
// and no two nodes are twins.
func benchCluster(tb testing.TB, nodes int, distinct bool) *cluster {
	c := newCluster(tb, newPool("default", onDemandOnly()))
	types := []string{"m5.2xlarge", "m6i.2xlarge", "m6g.2xlarge", "m7i.2xlarge"}
	cpus := []string{"100m", "250m", "500m", "1", "1500m"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	zones := fake.Zones()
	for i := range nodes {
		node := fmt.Sprintf("node-%04d", i)
		c.node(node, "default", offering{types[i%len(types)], zones[i%len(zones)], karpv1.CapacityTypeOnDemand})
		for k := range benchPodsPerNode {
			j := i*benchPodsPerNode + k
			name := fmt.Sprintf("pod-%05d", j)
			app := fmt.Sprintf("size-%02d", j%(len(cpus)*len(mems)))
			if distinct {
				app = name
			}
			c.pod(name, node, cpus[j%len(cpus)], mems[j%len(mems)], replicaOf(app))
		}
	}
	return c
}

// benchPaths are the two ways a pass can probe, compared side by side in one run: "rebuild"
// builds the planner's cluster afresh for every probe and simulates every candidate (the loop
// before it kept one snapshot per pass), "fork" builds it once per pass, forks it per probe and
// cuts probes that cannot succeed by resources alone.
var benchPaths = []struct {
	name    string
	rebuild bool
}{{"rebuild", true}, {"fork", false}}

// BenchmarkDisruptionPass times one full pass of the disruption loop's decision (every method in
// order, until one finds a command) over benchCluster, with its simulations counted, on both
// paths.
//
// "decides" is the pass as it is: multi-node consolidation finds a command after a binary search.
// "finds-nothing" is the worst pass: every simulation does its full work but is answered "no",
// so multi-node consolidation searches all the way down and single-node consolidation then
// simulates one candidate of each shape (12) and refuses its twins unsimulated.
// "finds-nothing-distinct" is the same over the fleet with no twins: single-node consolidation
// simulates every candidate, until its deadline (3 minutes, as the controller sets it). The
// fleet has room to spare, so no probe is cut: the figure is the forks' alone.
func BenchmarkDisruptionPass(b *testing.B) {
	for _, nodes := range benchSizes {
		fleets := map[bool]*cluster{false: benchCluster(b, nodes, false), true: benchCluster(b, nodes, true)}
		for _, bc := range []struct {
			name              string
			refuses, distinct bool
		}{
			{"decides", false, false},
			{"finds-nothing", true, false},
			{"finds-nothing-distinct", true, true},
		} {
			for _, path := range benchPaths {
				// The rebuild path only where it takes seconds: where every probe is refused it
				// runs into the 3-minute deadline.
				if path.rebuild && (nodes > benchNodes || bc.refuses) {
					continue
				}
				b.Run(fmt.Sprintf("nodes=%d/%s/path=%s", nodes, bc.name, path.name), func(b *testing.B) {
					benchPass(b, fleets[bc.distinct], bc.refuses, path.rebuild)
				})
			}
		}
	}
}

// benchPass times full passes over c, every simulation refused when refuses.
func benchPass(b *testing.B, c *cluster, refuses, rebuild bool) {
	ctx := context.Background()
	pl := &countingPlanner{Planner: testPlanner(b)}
	var planner Planner = pl
	if refuses {
		planner = refusingPlanner{pl}
	}
	var cmd *Command
	runtime.GC()
	cpu := cputime.Process(b).Seconds()
	b.ResetTimer()
	for range b.N {
		probe := &prober{state: c.State, planner: planner, rebuild: rebuild}
		cmd, _ = decideWith(ctx, probe, nil, DecideOptions{SpotToSpotMin: 15, Deadline: time.Now().Add(singleNodeTimeout)})
	}
	b.StopTimer()
	// CPU time moves less than wall time when other work shares the machine.
	b.ReportMetric((cputime.Process(b).Seconds()-cpu)/float64(b.N), "cpu-s/pass")
	b.Logf("pass decided: %s", describe(cmd))
	elapsed := b.Elapsed().Seconds()
	b.ReportMetric(elapsed/float64(b.N), "s/pass")
	b.ReportMetric(float64(pl.plans)/float64(b.N), "probes/pass")
	if pl.plans > 0 {
		b.ReportMetric(elapsed*1000/float64(pl.plans), "ms/probe")
	}
}

// refusingPlanner makes the plan it is asked for, then reports a pod of it unplaceable: the
// simulation's cost without its success.
type refusingPlanner struct{ Planner }

func (r refusingPlanner) Plan(ctx context.Context, in planner.Input) *planner.Plan {
	plan := r.Planner.Plan(ctx, in)
	plan.Unplaceable = append(plan.Unplaceable, planner.Unplaceable{Pod: in.Pending[0], Reasons: map[string]string{"": "the benchmark says no"}})
	return plan
}

// BenchmarkConsolidationProbe times one simulation of removing a single node of benchCluster:
// the unit of work single-node consolidation repeats per candidate. On the fork path the pass's
// snapshot is built before the timer starts, as the pass's first probe builds it once for all
// the others; first-probe-ms says what that first probe took, the build included.
func BenchmarkConsolidationProbe(b *testing.B) {
	for _, nodes := range benchSizes {
		c := benchCluster(b, nodes, false)
		cands, _ := Candidates(c.State, nil)
		if len(cands) != nodes {
			b.Fatalf("%d candidates, want %d", len(cands), nodes)
		}
		removed := []*Candidate{cands[len(cands)/2]}
		for _, path := range benchPaths {
			if path.rebuild && nodes > benchNodes {
				continue
			}
			b.Run(fmt.Sprintf("nodes=%d/path=%s", nodes, path.name), func(b *testing.B) {
				benchProbe(b, &prober{state: c.State, planner: testPlanner(b), rebuild: path.rebuild}, removed)
			})
		}
	}
}

// benchProbe times probe's simulation of removing removed.
func benchProbe(b *testing.B, probe *prober, removed []*Candidate) {
	ctx := context.Background()
	// One probe outside the timer, so that a single timed one (-benchtime 1x) is not the first;
	// on the fork path it builds the snapshot.
	start := time.Now()
	out := probe.simulate(ctx, removed)
	if !probe.rebuild {
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "first-probe-ms")
	}
	runtime.GC()
	cpu := cputime.Process(b).Seconds()
	b.ResetTimer()
	for range b.N {
		out = probe.simulate(ctx, removed)
	}
	b.StopTimer()
	b.Logf("removing %s: %d replacements, unplaceable %q", removed[0].Node.Name, len(out.Replacements), out.Unplaceable)
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/probe")
	b.ReportMetric((cputime.Process(b).Seconds()-cpu)*1000/float64(b.N), "cpu-ms/probe")
}
