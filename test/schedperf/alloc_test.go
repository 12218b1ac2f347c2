package schedperf

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// allocPhases are the marks between which BenchmarkSchedulerMemory counts what each scheduler
// allocates: the pods created (start), all bound, kwok settled (every pod Running), and the end
// of the idle settle. Resident memory at the end is the live heap plus the garbage allocated
// since the last collection, so bytes allocated per second once the pods are bound is what a
// scheduler that holds no more than another still pays in memory.
var allocPhases = []string{"start", "bound", "settled", "end"}

// allocMarks holds, per scheduler, the Go heap's allocated bytes (go_memstats_alloc_bytes_total,
// the total since the process started) and the time at each phase reached.
type allocMarks struct {
	bytes map[string][]float64
	at    []time.Time
}

func newAllocMarks() *allocMarks { return &allocMarks{bytes: map[string][]float64{}} }

// mark reads every child's allocated bytes now, from the runtime's statistics at the foot of
// its text heap profile: /metrics would cost Tailor a scrape of its per-pod and per-node
// Karpenter gauges, garbage that vanilla has no part in. With TAILOR_HEAPPROFILE it also saves
// each one's heap profile at the phase, after a GC (alloc_space counts only what the last GC
// saw), so that `go tool pprof -sample_index=alloc_space -diff_base` of two phases names what
// allocated between them; those GCs move the resident figures a little, the same for both. At
// the end it saves none: the profile taken after the figures are read is the end's.
func (m *allocMarks) mark(ctx context.Context, b *testing.B, children []*child, nodes int) {
	b.Helper()
	phase := allocPhases[len(m.at)]
	m.at = append(m.at, time.Now())
	for _, ch := range children {
		v, err := ch.totalAlloc(ctx)
		if err != nil {
			b.Fatal(err)
		}
		m.bytes[ch.s.name] = append(m.bytes[ch.s.name], v)
		if dir := os.Getenv("TAILOR_HEAPPROFILE"); dir != "" && phase != "end" {
			name := fmt.Sprintf("%s-scheduler-nodes=%d-%s", ch.s.name, nodes, phase)
			if err := ch.writeHeapProfile(ctx, dir, name); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// totalAlloc reads runtime.MemStats.TotalAlloc, the bytes allocated since the process started,
// from the "# TotalAlloc = N" line of the child's text heap profile.
func (ch *child) totalAlloc(ctx context.Context) (float64, error) {
	body, err := ch.get(ctx, "/debug/pprof/heap?debug=1")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# TotalAlloc = "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s's heap profile has no TotalAlloc", ch.s.name)
}

// report adds, for each scheduler, the MB allocated while the pods were bound and the MB per
// second allocated from the last binding to kwok settled and while idle after, and Tailor's over
// vanilla's for each.
func (m *allocMarks) report(b *testing.B) {
	const mb = 1 << 20
	figures := map[string][3]float64{}
	for name, v := range m.bytes {
		f := [3]float64{(v[1] - v[0]) / mb}
		for i, span := range []int{1, 2} {
			secs := m.at[span+1].Sub(m.at[span]).Seconds()
			f[i+1] = (v[span+1] - v[span]) / mb / secs
		}
		figures[name] = f
		b.ReportMetric(f[0], name+"-alloc-binding-MB")
		b.ReportMetric(f[1], name+"-alloc-settling-MB/s")
		b.ReportMetric(f[2], name+"-alloc-idle-MB/s")
	}
	t, v := figures[tailor.name], figures[vanilla.name]
	for i, unit := range []string{"alloc-binding-ratio", "alloc-settling-ratio", "alloc-idle-ratio"} {
		if v[i] > 0 {
			b.ReportMetric(t[i]/v[i], unit)
		}
	}
	fmt.Printf("schedperf: memory: binding %.1f s, settling %.1f s, idle %.1f s\n",
		m.at[1].Sub(m.at[0]).Seconds(), m.at[2].Sub(m.at[1]).Seconds(), m.at[3].Sub(m.at[2]).Seconds())
}

// metric reads one unlabelled sample of the child's /metrics.
func (ch *child) metric(ctx context.Context, name string) (float64, error) {
	body, err := ch.get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s's /metrics has no %s", ch.s.name, name)
}
