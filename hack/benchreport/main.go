// Command benchreport reads the output of `make bench` (Go benchmark format) and writes one
// report: each figure issues 15 and 35 ask for, its target, whether it is met and, where two paths or
// two schedulers ran side by side, their ratio. A figure whose benchmark did not run says so.
//
//	go run ./hack/benchreport bench.txt > bench-report.md
package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"
)

// figure is one line of the report: the values of unit across the benchmarks whose names match
// name, summarised by reduce, against a target (want, by cmp: "<=", ">=" or "<"; no target when
// cmp is empty).
type figure struct {
	what   string
	name   string
	unit   string
	reduce reducer
	cmp    string
	want   float64
}

// ratio is a figure made of two others: num over den, each summarised by its median, times
// scale (1 when zero): a per-pod ratio of two sizes scales a per-plan figure by their sizes.
type ratio struct {
	what     string
	num, den figure
	cmp      string
	want     float64
	scale    float64
}

type reducer struct {
	name string
	fn   func([]float64) float64
}

var (
	median = reducer{"median", func(xs []float64) float64 {
		s := slices.Sorted(slices.Values(xs))
		if n := len(s); n%2 == 0 {
			return (s[n/2-1] + s[n/2]) / 2
		}
		return s[len(s)/2]
	}}
	worst = reducer{"max", func(xs []float64) float64 { return slices.Max(xs) }}
	// geomean is for ratios measured in alternating order, where the one that runs second is
	// favoured: only the pair's geometric mean cancels the order out.
	geomean = reducer{"geometric mean", func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += math.Log(x)
		}
		return math.Exp(sum / float64(len(xs)))
	}}
)

const (
	pass        = "DisruptionPass/nodes=1000/finds-nothing/path="
	pass5k      = "DisruptionPass/nodes=5000/"
	probe5k     = "ConsolidationProbe/nodes=5000/path=fork"
	plan        = "Plan/catalog=karpenter/pods="
	upstream    = "Plan/catalog=upstream/pods="
	ec2Plan     = "Plan/catalog=ec2/pods="
	throughput  = "SchedulingThroughput/workload="
	memoryBench = "SchedulerMemory"
	fleet       = "FleetScale/pods="
)

var figures = []figure{
	{"worst disruption pass (1,000 nodes, nothing can move), fork", pass + "fork", "s/pass", median, "<=", 5},
	{"one consolidation probe, fork", pass + "fork", "ms/probe", median, "<=", 10},
	// Issue 35 at 5,000 nodes and 50,000 pods: the worst pass (every node different, so every
	// candidate is simulated) within 5 s, a probe within 5 ms.
	{"worst disruption pass, 5,000 nodes, nothing can move, no two nodes alike", pass5k + "finds-nothing-distinct/path=fork", "s/pass", median, "<=", 5},
	{"the same pass's CPU time (moves less than wall time on a shared machine)", pass5k + "finds-nothing-distinct/path=fork", "cpu-s/pass", median, "", 0},
	{"disruption pass, 5,000 nodes, nothing can move, 12 shapes of node", pass5k + "finds-nothing/path=fork", "s/pass", median, "<=", 5},
	{"one consolidation probe, 5,000 nodes", probe5k, "ms/probe", median, "<=", 5},
	{"planner, Karpenter's mix at 5,000 pods", plan + "5000/mix=diverse", "pods/s", median, ">=", 3000},
	{"planner, Karpenter's mix at 20,000 pods", plan + "20000/mix=diverse", "pods/s", median, "", 0},
	{"price over the LP bound, Karpenter's mix at 20,000 pods", plan + "20000/mix=diverse", "price/bound", median, "<=", 1.10},
	{"price over the LP bound, Karpenter's mix at 5,000 pods", plan + "5000/mix=diverse", "price/bound", median, "<=", 1.10},
	{"price over the LP bound, the generic workload at 5,000 pods", plan + "5000/mix=generic", "price/bound", median, "<=", 1.001},
	// Karpenter's own benchmark input (issue 35): its scheduler measures 1.65-1.69 × the bound
	// there, and 1.549 on Tailor's mix above, so the target is to beat its best. A plan leaves
	// some of those pods to the next plan; price/bound-all is after them.
	{"planner, Karpenter's mix at 2,000 pods", plan + "2000/mix=diverse", "pods/s", median, "", 0},
	{"price over the LP bound, Karpenter's mix at 2,000 pods", plan + "2000/mix=diverse", "price/bound", median, "<=", 1.549},
	{"planner, Karpenter's exact benchmark at 2,000 pods", upstream + "2000/mix=upstream", "pods/s", median, "", 0},
	{"planner, Karpenter's exact benchmark at 5,000 pods", upstream + "5000/mix=upstream", "pods/s", median, ">=", 3000},
	{"price over the LP bound, Karpenter's exact benchmark at 2,000 pods, every pod placed", upstream + "2000/mix=upstream", "price/bound-all", median, "<=", 1.65},
	{"price over the LP bound, Karpenter's exact benchmark at 5,000 pods, every pod placed", upstream + "5000/mix=upstream", "price/bound-all", median, "<=", 1.65},
	{"pods the first plan leaves to the next, Karpenter's exact benchmark at 5,000 pods", upstream + "5000/mix=upstream", "unplaced", median, "", 0},
	// The same pods to the letter: Karpenter's helper names every container at random, so no
	// two pods share a spec and Tailor shares no PreFilter state between them; the plan is the same.
	{"planner, Karpenter's exact benchmark to the letter (a spec per pod) at 5,000 pods", upstream + "5000/mix=upstream-literal", "pods/s", median, "", 0},
	{"planner, Karpenter's mix at 10,000 pods", plan + "10000/mix=diverse", "pods/s", median, "", 0},
	{"planner, Karpenter's mix at 50,000 pods (TAILOR_PLAN_50K=1)", plan + "50000/mix=diverse", "pods/s", median, "", 0},
	{"scheduler throughput with Tailor over vanilla, SchedulingBasic", throughput + "SchedulingBasic", "tailor/vanilla", geomean, ">=", 0.98},
	{"scheduler throughput with Tailor over vanilla, spread and anti-affinity", throughput + "TopologySpreadAntiAffinity", "tailor/vanilla", geomean, ">=", 0.98},
	// The same with each scheduler's start-up in the time (Tailor starts its controllers beside
	// the scheduler); the target is on the rates from the first binding.
	{"scheduler throughput with Tailor over vanilla from each start, SchedulingBasic", throughput + "SchedulingBasic", "tailor/vanilla-from-start", geomean, "", 0},
	{"scheduler throughput with Tailor over vanilla from each start, spread and anti-affinity", throughput + "TopologySpreadAntiAffinity", "tailor/vanilla-from-start", geomean, "", 0},
	// The same turns in the process's CPU-seconds, vanilla's over Tailor's: the cost side of the
	// ratio above, which a loaded machine moves far less than wall time.
	{"scheduler CPU, vanilla's over Tailor's, SchedulingBasic", throughput + "SchedulingBasic", "vanilla-cpu/tailor-cpu", geomean, "", 0},
	{"scheduler CPU, vanilla's over Tailor's, spread and anti-affinity", throughput + "TopologySpreadAntiAffinity", "vanilla-cpu/tailor-cpu", geomean, "", 0},
	{"resident memory with Tailor minus vanilla, 1,000 nodes and 10,000 pods (MB)", memoryBench + "/nodes=1000", "rss-diff-MB", median, "<=", 100},
	{"resident memory with Tailor minus vanilla, 5,000 nodes and 50,000 pods (MB)", memoryBench + "/nodes=5000", "rss-diff-MB", median, "<=", 150},
	{"Go heap in use with Tailor minus vanilla, 5,000 nodes and 50,000 pods (MB)", memoryBench + "/nodes=5000", "heap-inuse-diff-MB", median, "", 0},
	// Resident memory follows what a process allocates between collections, not only what it
	// holds: the bytes each allocates while the pods bind and once they are bound, side by side.
	{"bytes allocated while the pods bind, Tailor over vanilla, 1,000 nodes", memoryBench + "/nodes=1000", "alloc-binding-ratio", median, "", 0},
	{"bytes allocated while kwok runs the bound pods, Tailor over vanilla, 1,000 nodes", memoryBench + "/nodes=1000", "alloc-settling-ratio", median, "", 0},
	{"bytes allocated while the pods bind, Tailor over vanilla, 5,000 nodes", memoryBench + "/nodes=5000", "alloc-binding-ratio", median, "", 0},
	{"bytes allocated while kwok runs the bound pods, Tailor over vanilla, 5,000 nodes", memoryBench + "/nodes=5000", "alloc-settling-ratio", median, "", 0},
	{"MB Tailor allocates per second idle, every pod Running, 5,000 nodes", memoryBench + "/nodes=5000", "tailor-alloc-idle-MB/s", median, "", 0},
	{"MB one scrape of tailor-scheduler's /metrics allocates (Karpenter's per-pod and per-node gauges), 5,000 nodes", memoryBench + "/nodes=5000", "tailor-scrape-alloc-MB", median, "", 0},
	{"burst of 1,000 pods: last pod created to last NodeClaim created, every run", "Burst", "max-s-to-last-nodeclaim", worst, "<", 1},
	{"burst of 1,000 pods: last pod created to every pod Running, every run", "Burst", "max-s-to-all-running", worst, "<", 10},
}

// perSize are figures of a benchmark whose size is in its name (make bench-scale: the size is a
// parameter, and a run at a small size must not read as the issue's): each is reported once for
// every benchmark whose name starts with name, under that benchmark's name.
var perSize = []figure{
	{"fleet at scale: scale-up to every pod Running (s)", fleet, "s-to-all-running", worst, "", 0},
	{"fleet at scale: scale-up to the last pod bound (s); kwok runs them after", fleet, "s-to-all-bound", worst, "", 0},
	// Issue 35's targets for the sandbox at scale: the time after the last pod is created is
	// Tailor's binding, and consolidation runs within the default budgets.
	{"fleet at scale: last pod created to last pod bound (s)", fleet, "s-last-created-to-last-bound", worst, "<=", 60},
	{"fleet at scale: a pod's creation to its binding, median (s)", fleet, "s-created-to-bound-p50", worst, "", 0},
	{"fleet at scale: a pod's creation to its binding, 90th percentile (s)", fleet, "s-created-to-bound-p90", worst, "<=", 15},
	// Where a pod's wait went, step by step along the NodeClaim it bound to (each step's 90th
	// percentile over the pods; p50 beside it in bench.txt): the slow step is the one to fix.
	{"fleet at scale: a pod's wait, its creation to its NodeClaim's, 90th percentile (s)", fleet, "s-step-planned-p90", worst, "", 0},
	{"fleet at scale: a pod's wait, NodeClaim created to Launched, 90th percentile (s)", fleet, "s-step-launched-p90", worst, "", 0},
	{"fleet at scale: a pod's wait, Launched to its Node created, 90th percentile (s)", fleet, "s-step-joined-p90", worst, "", 0},
	{"fleet at scale: a pod's wait, Launched and Node created to Registered, 90th percentile (s)", fleet, "s-step-registered-p90", worst, "", 0},
	{"fleet at scale: a pod's wait, Node created to Ready (kwok), 90th percentile (s)", fleet, "s-step-ready-p90", worst, "", 0},
	{"fleet at scale: a pod's wait, Registered and Ready to Initialized, 90th percentile (s)", fleet, "s-step-initialized-p90", worst, "", 0},
	{"fleet at scale: a pod's wait, Initialized to its binding, 90th percentile (s)", fleet, "s-step-bound-p90", worst, "", 0},
	// What the provisioner itself spent in the scale-up, beside the sandbox's steps above.
	{"fleet at scale: the provisioner's rounds that planned pods in the scale-up", fleet, "plan-rounds-up", worst, "", 0},
	{"fleet at scale: the provisioner's seconds spent planning in the scale-up", fleet, "s-planning-up", worst, "", 0},
	// The whole process's CPU (API server, etcd, kwok, the controllers and Tailor): with the
	// cores full, the steps above take as long as this allows.
	{"fleet at scale: CPU the whole process used in the scale-up (CPU-s)", fleet, "cpu-s-up", worst, "", 0},
	{"fleet at scale: scale-down to the fleet consolidated (s)", fleet, "s-to-consolidated", worst, "<=", 300},
	{"fleet at scale: of which no command in flight, deciding (s)", fleet, "s-consolidation-deciding", worst, "", 0},
	{"fleet at scale: of which a node draining (s)", fleet, "s-consolidation-draining", worst, "", 0},
	{"fleet at scale: of which nodes terminating only (s)", fleet, "s-consolidation-terminating", worst, "", 0},
	{"fleet at scale: NodeClaim status writes per NodeClaim created", fleet, "status-writes/nodeclaim", worst, "", 0},
	{"fleet at scale: writes of the NodeClaim itself per NodeClaim created", fleet, "writes/nodeclaim", worst, "", 0},
	{"fleet at scale: Events per NodeClaim created (the pods' Nominated among them)", fleet, "events/nodeclaim", worst, "", 0},
	{"fleet at scale: peak resident memory of the process, API server and etcd included (MB)", fleet, "peak-rss-MB", worst, "", 0},
	{"fleet at scale: peak Go heap of the process (MB)", fleet, "peak-heap-MB", worst, "", 0},
	{"fleet at scale: API requests per second of tailor-scheduler", fleet, "sched-req/s", worst, "", 0},
	{"fleet at scale: the same, bindings left out", fleet, "sched-req/s-without-bindings", worst, "", 0},
	{"fleet at scale: the same, from the scale-down to the end", fleet, "sched-req/s-scale-down", worst, "", 0},
	{"fleet at scale: NodeClaims at the peak", fleet, "nodes-peak", worst, "", 0},
	{"fleet at scale: NodeClaims at the end", fleet, "nodes-end", worst, "", 0},
	{"fleet at scale: NodeClaims at the end over the fewest the pods need", fleet, "nodes-end/needed", worst, "", 0},
	{"fleet at scale: pods Pending at the end", fleet, "pending-end", worst, "<=", 0},
	{"fleet at scale: PodDisruptionBudget statuses below what it requires", fleet, "pdb-violations", worst, "<=", 0},
}

// sized expands perSize into one figure per benchmark name that ran, or leaves a figure as it
// is, reported as not run, where none did.
func sized(values map[string]map[string][]float64) []figure {
	var out []figure
	for _, fig := range perSize {
		var names []string
		for name := range values {
			if strings.HasPrefix(name, fig.name) && len(withName(fig, name).values(values)) > 0 {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			out = append(out, fig)
			continue
		}
		slices.Sort(names)
		for _, name := range names {
			out = append(out, withName(fig, name))
		}
	}
	return out
}

func withName(fig figure, name string) figure {
	fig.name = name
	return fig
}

var ratios = []ratio{
	{"worst disruption pass, rebuild over fork",
		figure{unit: "s/pass", name: pass + "rebuild"}, figure{unit: "s/pass", name: pass + "fork"}, "", 0, 0},
	{"planner pods/s, 20,000 pods over 2,000 (Karpenter's mix)",
		figure{unit: "pods/s", name: plan + "20000/mix=diverse"}, figure{unit: "pods/s", name: plan + "2000/mix=diverse"}, ">=", 0.6, 0},
	// The same in pods per CPU-second: 2,000 pods' CPU over 20,000's, times ten. Wall time on a
	// shared machine says as much about the neighbours, and a plan of 2,000 (a second or less)
	// is hit hardest by them.
	{"planner pods per CPU-second, 20,000 pods over 2,000 (Karpenter's mix)",
		figure{unit: "cpu-s/op", name: plan + "2000/mix=diverse"}, figure{unit: "cpu-s/op", name: plan + "20000/mix=diverse"}, ">=", 0.6, 10},
	// The same curve on the catalog generated from EC2's published facts (us-west-2: 1,345 types,
	// three times the offerings of Karpenter's): issue 35 asks for it once that catalog landed.
	{"planner pods per CPU-second, 20,000 pods over 2,000 (Tailor's mix, the generated EC2 catalog)",
		figure{unit: "cpu-s/op", name: ec2Plan + "2000/mix=diverse"}, figure{unit: "cpu-s/op", name: ec2Plan + "20000/mix=diverse"}, ">=", 0.6, 10},
	{"planner pods/s, 50,000 pods over 2,000 (Karpenter's mix, TAILOR_PLAN_50K=1)",
		figure{unit: "pods/s", name: plan + "50000/mix=diverse"}, figure{unit: "pods/s", name: plan + "2000/mix=diverse"}, "", 0, 0},
	{"planner pods/s, 20,000 pods over 2,000 (Karpenter's exact benchmark)",
		figure{unit: "pods/s", name: upstream + "20000/mix=upstream"}, figure{unit: "pods/s", name: upstream + "2000/mix=upstream"}, ">=", 0.6, 0},
	{"planner pods/s at 5,000 pods, Karpenter's exact benchmark to the letter (a spec per pod) over the same pods sharing specs",
		figure{unit: "pods/s", name: upstream + "5000/mix=upstream-literal"}, figure{unit: "pods/s", name: upstream + "5000/mix=upstream"}, "", 0, 0},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchreport BENCH-OUTPUT")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	values, err := read(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	write(os.Stdout, values)
}

// read returns every value in the benchmark output by benchmark name (without its -GOMAXPROCS
// suffix) and unit.
func read(r io.Reader) (map[string]map[string][]float64, error) {
	out := map[string]map[string][]float64{}
	rd := benchfmt.NewReader(r, "bench")
	for rd.Scan() {
		res, ok := rd.Result().(*benchfmt.Result)
		if !ok {
			continue // syntax errors of other lines (test logs) are not the report's business
		}
		name := gomaxprocs.ReplaceAllString(strings.TrimPrefix(string(res.Name), "Benchmark"), "")
		if out[name] == nil {
			out[name] = map[string][]float64{}
		}
		for _, v := range res.Values {
			out[name][v.Unit] = append(out[name][v.Unit], v.Value)
		}
	}
	return out, rd.Err()
}

var gomaxprocs = regexp.MustCompile(`-\d+$`)

// value summarises fig's values, or reports that none ran.
func (fig figure) value(values map[string]map[string][]float64) (float64, bool) {
	xs := fig.values(values)
	if len(xs) == 0 {
		return 0, false
	}
	reduce := fig.reduce
	if reduce.fn == nil {
		reduce = median
	}
	return reduce.fn(xs), true
}

// values are fig's values in fig's unit. benchfmt tidies a unit as it reads it ("rss-diff-MB"
// becomes "rss-diff-B", its values times 1e6), so the unit is looked up tidied and the values
// scaled back.
func (fig figure) values(values map[string]map[string][]float64) []float64 {
	factor, unit := benchunit.Tidy(1, fig.unit)
	var out []float64
	for _, x := range values[fig.name][unit] {
		out = append(out, x/factor)
	}
	return out
}

func verdict(v float64, cmp string, want float64) string {
	met := false
	switch cmp {
	case "":
		return "—"
	case "<=":
		met = v <= want
	case ">=":
		met = v >= want
	case "<":
		met = v < want
	}
	if met {
		return "met"
	}
	return "**missed**"
}

func target(cmp string, want float64) string {
	if cmp == "" {
		return "—"
	}
	return fmt.Sprintf("%s %g", strings.Replace(strings.Replace(cmp, "<=", "≤", 1), ">=", "≥", 1), want)
}

func write(w io.Writer, values map[string]map[string][]float64) {
	fmt.Fprintln(w, "| figure | benchmark | value | target | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, fig := range append(slices.Clone(figures), sized(values)...) {
		v, ok := fig.value(values)
		if !ok {
			fmt.Fprintf(w, "| %s | `%s` %s | not run | %s | — |\n", fig.what, fig.name, fig.unit, target(fig.cmp, fig.want))
			continue
		}
		fmt.Fprintf(w, "| %s | `%s` %s (%s of %d) | %.4g | %s | %s |\n", fig.what, fig.name, fig.unit,
			fig.reduce.name, len(fig.values(values)), v, target(fig.cmp, fig.want), verdict(v, fig.cmp, fig.want))
	}
	for _, r := range ratios {
		n, okN := r.num.value(values)
		d, okD := r.den.value(values)
		if !okN || !okD || d == 0 {
			fmt.Fprintf(w, "| %s | `%s` over `%s` %s | not run | %s | — |\n", r.what, r.num.name, r.den.name, r.num.unit, target(r.cmp, r.want))
			continue
		}
		v, scaled := n/d, ""
		if r.scale != 0 {
			v, scaled = v*r.scale, fmt.Sprintf(", times %g", r.scale)
		}
		fmt.Fprintf(w, "| %s | `%s` over `%s` %s (medians%s) | %.4g | %s | %s |\n", r.what, r.num.name, r.den.name, r.num.unit,
			scaled, v, target(r.cmp, r.want), verdict(v, r.cmp, r.want))
	}
}
