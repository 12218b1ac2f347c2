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
BenchmarkDisruptionPass/finds-nothing/path=rebuild-2  1  63000000000 ns/op  63.0 s/pass
BenchmarkDisruptionPass/finds-nothing/path=fork-2     1  4100000000 ns/op   4.1 s/pass  8.2 ms/probe
a test's log line
BenchmarkDisruptionPass/finds-nothing/path=fork-2     1  4300000000 ns/op   6.3 s/pass  8.6 ms/probe
BenchmarkDisruptionPass/finds-nothing/path=fork-2     1  4300000000 ns/op   4.3 s/pass  9.6 ms/probe
BenchmarkSchedulingThroughput/workload=SchedulingBasic-2  1  1 ns/op  2.0 tailor/vanilla
BenchmarkSchedulingThroughput/workload=SchedulingBasic-2  1  1 ns/op  0.5 tailor/vanilla
BenchmarkBurst-2  1  1 ns/op  0.2 max-s-to-last-nodeclaim
BenchmarkBurst-2  1  1 ns/op  1.5 max-s-to-last-nodeclaim
BenchmarkFleetScale/pods=400-2  1  1 ns/op  50.0 s-to-all-running  0 pending-end  760 peak-rss-MB
BenchmarkSchedulerMemory-2  1  1 ns/op  90 rss-diff-MB
BenchmarkPlan/catalog=upstream/pods=2000/mix=upstream-2  1  1 ns/op  1400 pods/s  1.29 price/bound  1.11 price/bound-all
BenchmarkPlan/catalog=upstream/pods=20000/mix=upstream-2  1  1 ns/op  700 pods/s
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
		"max-s-to-last-nodeclaim (max of 2) | 1.5 | < 1 | **missed** |",
		"s/pass (medians) | 14.65 |",
		"`Plan/catalog=karpenter/pods=5000/mix=diverse` pods/s | not run | ≥ 3000 |",
		"`FleetScale/pods=400` s-to-all-running (max of 1) | 50 | — | — |",
		"`FleetScale/pods=400` pending-end (max of 1) | 0 | ≤ 0 | met |",
		"`FleetScale/pods=` pdb-violations | not run | ≤ 0 |",
		"`FleetScale/pods=400` peak-rss-MB (max of 1) | 760 | — | — |",
		"rss-diff-MB (median of 1) | 90 | ≤ 100 | met |",
		"`Plan/catalog=upstream/pods=2000/mix=upstream` price/bound-all (median of 1) | 1.11 | ≤ 1.65 | met |",
		"pods/s (medians) | 0.5 | ≥ 0.6 | **missed** |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
