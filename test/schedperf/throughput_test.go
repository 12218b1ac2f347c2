package schedperf

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/internal/cputime"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

const (
	throughputNodes = 500
	throughputPods  = 5000
)

// throughputRuns counts the runs of each workload in this process, so that the order in which
// the two schedulers go alternates from one -count run to the next: neither always meets the
// cluster first.
var (
	throughputRunsMu sync.Mutex
	throughputRuns   = map[string]int{}
)

// BenchmarkSchedulingThroughput schedules 5,000 pods that all fit 500 existing nodes with the
// vanilla kube-scheduler and with tailor-scheduler, one after the other on the same in-process
// control plane, and reports each one's pods/s and their ratio (target ≥ 0.98, issue 35). With
// TAILOR_CPUPROFILE=DIR it writes a CPU profile of each turn there (see startTurnProfile).
func BenchmarkSchedulingThroughput(b *testing.B) {
	for _, w := range []workload{schedulingBasic, topologySpreadAntiAffinity} {
		b.Run("workload="+w.name, func(b *testing.B) { benchmarkThroughput(b, w) })
	}
}

func benchmarkThroughput(b *testing.B, w workload) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())
	c := startCluster(ctx, b)
	if err := c.createNodes(ctx, throughputNodes, false); err != nil {
		b.Fatal(err)
	}
	if err := c.applyNodePool(ctx); err != nil {
		b.Fatal(err)
	}
	throughputRunsMu.Lock()
	run := throughputRuns[w.name]
	throughputRuns[w.name]++
	throughputRunsMu.Unlock()
	order := []scheduler{vanilla, tailor}
	if run%2 == 1 {
		order = []scheduler{tailor, vanilla}
	}
	sum, fromStart, cpu := map[string]float64{}, map[string]float64{}, map[string]float64{}
	iterations := 0
	for b.Loop() {
		for _, s := range order {
			turn, err := schedulePhase(ctx, b, c, s, w, fmt.Sprintf("%s-%d", s.name, iterations))
			if err != nil {
				b.Fatalf("%s, %s: %v", w.name, s.name, err)
			}
			sum[s.name] += turn.rate
			fromStart[s.name] += turn.fromStart
			cpu[s.name] += turn.cpu.Seconds()
		}
		iterations++
	}
	v, t := sum[vanilla.name]/float64(iterations), sum[tailor.name]/float64(iterations)
	b.ReportMetric(v, "vanilla-pods/s")
	b.ReportMetric(t, "tailor-pods/s")
	b.ReportMetric(t/v, "tailor/vanilla")
	// The same with each scheduler's start-up in it: Tailor's starts more informers and its
	// controllers beside the scheduler.
	b.ReportMetric(fromStart[tailor.name]/fromStart[vanilla.name], "tailor/vanilla-from-start")
	// The same comparison in CPU: the process's CPU-seconds from a scheduler's start to its last
	// binding (the API server and etcd serve both the same way). A loaded machine stretches a
	// turn's wall time by whatever its neighbours do, and its CPU far less.
	b.ReportMetric(cpu[tailor.name]/float64(iterations), "tailor-cpu-s")
	b.ReportMetric(cpu[vanilla.name]/float64(iterations), "vanilla-cpu-s")
	b.ReportMetric(cpu[vanilla.name]/cpu[tailor.name], "vanilla-cpu/tailor-cpu")
	fmt.Printf("schedperf: %s: %s went first\n", w.name, order[0].name)
}

// turn is what schedulePhase measured: pods bound per second from the first binding to the last,
// the same from the moment the scheduler was asked to start, and the process's CPU time.
type turn struct {
	rate, fromStart float64
	cpu             time.Duration
}

// schedulePhase creates the workload's pods for s while no scheduler runs, then starts s and
// returns the pods it bound per second from its first binding to its last, the same from the
// moment it was asked to start (its start-up included), and the process's CPU time from then to
// the last binding. Starting on a full queue keeps pod creation, which the API server does no
// faster than a scheduler binds, out of the figure.
//
// Both clocks start at the same event for both schedulers. They once started at "started":
// vanilla's before its informers synced, Tailor's once its provisioner and controllers ran, by
// which time its scheduler had bound 400 to 900 pods. In TopologySpreadAntiAffinity a pod costs
// more the more pods are placed (inter-pod affinity and spread count the pods already there), so
// Tailor's rate was of the dearer pods alone: 0.90 to 0.92 of vanilla's with the same CPU.
//
// The scheduler is stopped and every pod deleted before it returns, so the next phase meets the
// same empty nodes.
func schedulePhase(ctx context.Context, b *testing.B, c *cluster, s scheduler, w workload, phase string) (turn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		if err := c.deletePods(ctx, ""); err != nil {
			b.Error(err)
		}
	}()
	pods := w.pods(s.schedulerName, phase, throughputPods)
	bs, err := watchBindings(ctx, c.kube, "phase="+phase, len(pods))
	if err != nil {
		return turn{}, err
	}
	if err := c.createPods(ctx, pods); err != nil {
		return turn{}, err
	}
	roundsBefore := provisionerRounds()
	stopProfile, err := startTurnProfile(w.name, phase)
	if err != nil {
		return turn{}, err
	}
	cpuBefore := cputime.Process(b)
	asked := time.Now()
	stop, started := s.startInProcess(ctx, b, c)
	defer stop()
	err = bs.wait(ctx, 10*time.Minute)
	cpu := cputime.Process(b) - cpuBefore
	stopProfile()
	if err != nil {
		return turn{}, err
	}
	rate, counted, took := bs.rateFrom(time.Time{})
	fromStart, _, tookFromStart := bs.rateFrom(asked)
	// Printed, not logged: the API server's own logs would bury it.
	fmt.Printf("schedperf: %s, %s: %d pods bound in %s from the first binding, %.1f pods/s; %.1f pods/s from the start (%s; started %s, first binding %s in); %.1f CPU-s\n",
		w.name, s.name, counted, took.Round(time.Millisecond), rate, fromStart, tookFromStart.Round(time.Millisecond),
		started.Sub(asked).Round(time.Millisecond), bs.first().Sub(asked).Round(time.Millisecond), cpu.Seconds())
	if s.tailor {
		fmt.Printf("schedperf: %s, %s: provisioner rounds until the last binding: %s\n", w.name, s.name, provisionerRounds().since(roundsBefore))
	}
	printRefusals(ctx, c, phase)
	// Every pod fits an existing node: a NodeClaim would mean Tailor's planner disagreed with the
	// scheduler, and the phase would measure a launch, not scheduling.
	claims, err := c.tailor.KarpenterV1().NodeClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return turn{}, err
	}
	if len(claims.Items) > 0 {
		return turn{}, fmt.Errorf("Tailor created %d NodeClaims for pods that fit the existing nodes", len(claims.Items))
	}
	if counted < len(pods)/2 {
		return turn{}, fmt.Errorf("only %d of %d pods were bound after %s started: too few to measure", counted, len(pods), s.name)
	}
	return turn{rate: rate, fromStart: fromStart, cpu: cpu}, nil
}

// rounds are the provisioner's rounds so far by outcome (metrics.ProvisionerRounds): Tailor runs
// in this process, so its counters are this process's.
type rounds map[string]float64

func provisionerRounds() rounds {
	out := rounds{}
	for _, outcome := range []string{"quiet", "idle", "planned"} {
		out[outcome] = testutil.ToFloat64(metrics.ProvisionerRounds.WithLabelValues(outcome))
	}
	return out
}

func (r rounds) since(before rounds) string {
	return fmt.Sprintf("%.0f quiet, %.0f idle, %.0f planned", r["quiet"]-before["quiet"], r["idle"]-before["idle"], r["planned"]-before["planned"])
}

// printRefusals prints why the scheduler refused the phase's pods, if it did (its FailedScheduling
// Events, by message), and how many Tailor found stranded: every pod fits, so a refusal is a pod
// the scheduler had to try again, and one it leaves unschedulable until an event wakes it is what
// makes a slow turn. The scheduler and Tailor write events.k8s.io Events; they are read as such.
func printRefusals(ctx context.Context, c *cluster, phase string) {
	for _, reason := range []string{"FailedScheduling", "Stranded"} {
		evs, err := c.kube.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			fmt.Printf("schedperf: %s: listing %s Events: %v\n", phase, reason, err)
			continue
		}
		byNote := map[string]int{}
		for _, ev := range evs.Items {
			if strings.HasPrefix(ev.Regarding.Name, phase+"-") {
				n := 1
				if ev.Series != nil {
					n = int(ev.Series.Count)
				}
				byNote[ev.Note] += n
			}
		}
		for _, note := range slices.Sorted(maps.Keys(byNote)) {
			fmt.Printf("schedperf: %s: %d %s: %s\n", phase, byNote[note], reason, note)
		}
	}
}

// profiledTurns numbers the turns' profiles, so -count runs do not overwrite each other's.
var profiledTurns atomic.Int32

// startTurnProfile profiles the process's CPU from a scheduler's start to its last binding when
// TAILOR_CPUPROFILE names a directory, as DIR/WORKLOAD-N-PHASE.cpu.pprof, and returns what stops
// it. The schedulers, the API server and etcd share this process, so a turn's profile is read by
// package: what Tailor adds is the samples under github.com/tailor-sh/tailor beside the
// scheduler's, which a loaded machine slows down together (`go tool pprof -top -focus=tailor-sh`).
func startTurnProfile(workload, phase string) (stop func(), err error) {
	dir := os.Getenv("TAILOR_CPUPROFILE")
	if dir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("TAILOR_CPUPROFILE=%s: %w", dir, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d-%s.cpu.pprof", workload, profiledTurns.Add(1), phase))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("TAILOR_CPUPROFILE=%s: %w", dir, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("TAILOR_CPUPROFILE=%s: %w", dir, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		fmt.Printf("schedperf: wrote %s\n", path)
	}, nil
}
