package main

import (
	"bytes"
	"strings"
	"testing"
)

// The report reads Go's benchmark format among other lines, drops the GOMAXPROCS suffix, takes
// the median of repeated runs, the worst of a figure that must hold in every run and the
// geometric mean of ratios measured in alternating order, and says which targets are missed; a
// figure of a benchmark sized in its name is reported for each size that ran, and a unit benchfmt
// rescales as it reads (MB) is reported in the benchmark's own.
func TestReportSummarisesAgainstTargets(t *testing.T) {
	const out = `goos: linux
pkg: github.com/tailor-sh/tailor/pkg/disruption
BenchmarkDisruptionPass/nodes=1000/finds-nothing/path=rebuild-2  1  63000000000 ns/op  63.0 s/pass
BenchmarkDisruptionPass/nodes=1000/finds-nothing/path=fork-2     1  4100000000 ns/op   4.1 s/pass  8.2 ms/probe
a test's log line
BenchmarkDisruptionPass/nodes=1000/finds-nothing/path=fork-2     1  4300000000 ns/op   6.3 s/pass  8.6 ms/probe
BenchmarkDisruptionPass/nodes=1000/finds-nothing/path=fork-2     1  4300000000 ns/op   4.3 s/pass  9.6 ms/probe
BenchmarkDisruptionPass/nodes=5000/finds-nothing-distinct/path=fork-2  1  6000000000 ns/op  6.0 s/pass  5.2 cpu-s/pass
BenchmarkConsolidationProbe/nodes=5000/path=fork-2  200  1 ns/op  1.2 ms/probe
BenchmarkSchedulingThroughput/workload=SchedulingBasic-2  1  1 ns/op  2.0 tailor/vanilla  0.9 vanilla-cpu/tailor-cpu
BenchmarkSchedulingThroughput/workload=SchedulingBasic-2  1  1 ns/op  0.5 tailor/vanilla  1.1 vanilla-cpu/tailor-cpu
BenchmarkBurst-2  1  1 ns/op  0.2 max-s-to-last-nodeclaim
BenchmarkBurst-2  1  1 ns/op  1.5 max-s-to-last-nodeclaim
BenchmarkFleetScale/pods=400-2  1  1 ns/op  50.0 s-to-all-running  0 pending-end  760 peak-rss-MB  12 s-created-to-bound-p90  320 s-to-consolidated
BenchmarkSchedulerMemory/nodes=1000-2  1  1 ns/op  90 rss-diff-MB
BenchmarkSchedulerMemory/nodes=5000-2  1  1 ns/op  160 rss-diff-MB  1.02 alloc-binding-ratio  210 tailor-scrape-alloc-MB
BenchmarkPlan/catalog=upstream/pods=2000/mix=upstream-2  1  1 ns/op  1400 pods/s  1.29 price/bound  1.11 price/bound-all
BenchmarkPlan/catalog=upstream/pods=20000/mix=upstream-2  1  1 ns/op  700 pods/s
BenchmarkPlan/catalog=upstream/pods=5000/mix=upstream-2  1  1 ns/op  600 pods/s
BenchmarkPlan/catalog=upstream/pods=5000/mix=upstream-literal-2  1  1 ns/op  200 pods/s
BenchmarkPlan/catalog=karpenter/pods=2000/mix=diverse-2  1  1 ns/op  3000 pods/s  0.30 cpu-s/op
BenchmarkPlan/catalog=karpenter/pods=20000/mix=diverse-2  1  1 ns/op  2100 pods/s  4.0 cpu-s/op  1.066 price/bound
BenchmarkPlan/catalog=ec2/pods=2000/mix=diverse-2  1  1 ns/op  900 pods/s  1.0 cpu-s/op
BenchmarkPlan/catalog=ec2/pods=20000/mix=diverse-2  1  1 ns/op  2200 pods/s  20.0 cpu-s/op
`
	values, err := read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	write(&buf, values)
	report := buf.String()
	for _, want := range []string{
		"s/pass (median of 3) | 4.3 | ≤ 5 | met |",
		"ms/probe (median of 3) | 8.6 | ≤ 10 | met |",
		"tailor/vanilla (geometric mean of 2) | 1 | ≥ 0.98 | met |",
		"vanilla-cpu/tailor-cpu (geometric mean of 2) | 0.995 | — | — |",
		"max-s-to-last-nodeclaim (max of 2) | 1.5 | < 1 | **missed** |",
		"s/pass (medians) | 14.65 |",
		"`Plan/catalog=karpenter/pods=5000/mix=diverse` pods/s | not run | ≥ 3000 |",
		"`FleetScale/pods=400` s-to-all-running (max of 1) | 50 | — | — |",
		"`FleetScale/pods=400` pending-end (max of 1) | 0 | ≤ 0 | met |",
		"`FleetScale/pods=` pdb-violations | not run | ≤ 0 |",
		"`FleetScale/pods=400` peak-rss-MB (max of 1) | 760 | — | — |",
		"`FleetScale/pods=400` s-created-to-bound-p90 (max of 1) | 12 | ≤ 15 | met |",
		"`FleetScale/pods=400` s-to-consolidated (max of 1) | 320 | ≤ 300 | **missed** |",
		"rss-diff-MB (median of 1) | 90 | ≤ 100 | met |",
		"`SchedulerMemory/nodes=5000` rss-diff-MB (median of 1) | 160 | ≤ 150 | **missed** |",
		"`SchedulerMemory/nodes=5000` alloc-binding-ratio (median of 1) | 1.02 | — | — |",
		"`SchedulerMemory/nodes=5000` tailor-scrape-alloc-MB (median of 1) | 210 | — | — |",
		"`DisruptionPass/nodes=5000/finds-nothing-distinct/path=fork` s/pass (median of 1) | 6 | ≤ 5 | **missed** |",
		"`ConsolidationProbe/nodes=5000/path=fork` ms/probe (median of 1) | 1.2 | ≤ 5 | met |",
		"`Plan/catalog=upstream/pods=2000/mix=upstream` price/bound-all (median of 1) | 1.11 | ≤ 1.65 | met |",
		"pods/s (medians) | 0.5 | ≥ 0.6 | **missed** |",
		"`Plan/catalog=upstream/pods=5000/mix=upstream-literal` over `Plan/catalog=upstream/pods=5000/mix=upstream` pods/s (medians) | 0.3333 | — | — |",
		"`Plan/catalog=karpenter/pods=20000/mix=diverse` over `Plan/catalog=karpenter/pods=2000/mix=diverse` pods/s (medians) | 0.7 | ≥ 0.6 | met |",
		"cpu-s/op (medians, times 10) | 0.75 | ≥ 0.6 | met |",
		"`Plan/catalog=ec2/pods=2000/mix=diverse` over `Plan/catalog=ec2/pods=20000/mix=diverse` cpu-s/op (medians, times 10) | 0.5 | ≥ 0.6 | **missed** |",
		"price/bound (median of 1) | 1.066 | ≤ 1.1 | met |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
