package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/workload"
)

// FixedSeeds run in `make test`: a spread of scenarios, half on each cloud. Four, because a
// seed takes 20-60 s, most of it waiting for consolidation after the scale-down.
var FixedSeeds = []uint64{1, 2, 3, 5}

// RegressionSeeds are seeds that found Tailor bugs (see docs/design/workload-harness.md); they run
// with the fixed set, so the bug they found stays fixed.
//
// Seed 4 (AWS): a 6-replica Deployment (3 cpu, 1Gi, priority -10 without preemption) with zone
// spread maxSkew 1, minDomains 3, DoNotSchedule: all 6 stayed Pending beside the nodes launched
// for them, nominated two to a zone, which the scheduler's Filter with nominated pods refuses.
// Fixed by nominating only what the scheduler takes (pkg/provision/admissible.go).
//
// Seed 1413 (fake): replicas with required pod affinity by zone to each other and zone spread
// over two zones stayed Pending beside an empty zone (pkg/provision/planner/domains.go). It passes
// since, but is left out: its 55 s would take the fixed run (about 155 s) past 3 minutes.
// TestEmptyDomainsYieldToTheScheduler keeps it fixed; replay it with HARNESS_SEEDS=1413, .
//
// Seed 2518 (AWS): the fleet cost 1.44 x the offline plan, which the simulated catalog made
// with Graviton nodes 64 MiB roomier than the AWS cloud's. Left out for time like 1413;
// TestTheOfflinePlanLaunchesWhatTheAWSCloudWould keeps it fixed in a second; replay it with
// HARNESS_SEEDS=2518, .
//
// Seed 2580 (AWS): StatefulSet db-7, whose capacity-type spread with minDomains 3 over on-demand
// pools allows one replica in all, ran one replica and left the other waiting; consolidation
// replaced the running one's node, and the waiting replica took the replacement (its port, the
// one spread slot) before the evicted one came back, which then fit nowhere. Fixed by letting
// the waiting pods take their pick of new capacity too, first, in every probe
// (pkg/disruption/waiting.go); TestRemovalLeavesTheOnlySpreadSlotToTheEvictedReplica_Seed2580
// and TestUnplaceableHoldsThePodThatWouldFitNowhere_Seed2580 keep the shape with the real Filter
// plugins. Left out for time like 1413 (60-200 s with its drift half); replay it with
// HARNESS_SEEDS=2580, .
var RegressionSeeds = []uint64{4}

// SeedsEnv and FirstSeedEnv select other seeds: HARNESS_SEEDS=N runs N seeds from
// HARNESS_FIRST_SEED (default 1000); HARNESS_SEEDS=3,17,42 (or 7, with the comma) runs those.
const (
	SeedsEnv     = "HARNESS_SEEDS"
	FirstSeedEnv = "HARNESS_FIRST_SEED"
)

func TestWorkloadHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("the harness starts a control plane per seed; skipped in -short mode")
	}
	seeds, err := seedsToRun()
	if err != nil {
		t.Fatal(err)
	}
	// One seed at a time: kube-scheduler registers process-wide state (its configz entry), so
	// a second scheduler in the same process cannot start while one runs.
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d/cloud=%s", seed, cloudFor(seed)), func(t *testing.T) {
			RunSeed(t, seed)
		})
	}
}

func seedsToRun() ([]uint64, error) {
	v := os.Getenv(SeedsEnv)
	if v == "" {
		return append(append([]uint64{}, FixedSeeds...), RegressionSeeds...), nil
	}
	if strings.Contains(v, ",") {
		var out []uint64
		for _, s := range strings.Split(v, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s=%q: %w", SeedsEnv, v, err)
			}
			out = append(out, n)
		}
		return out, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", SeedsEnv, v, err)
	}
	first := uint64(1000)
	if f := os.Getenv(FirstSeedEnv); f != "" {
		if first, err = strconv.ParseUint(f, 10, 64); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", FirstSeedEnv, f, err)
		}
	}
	out := make([]uint64, 0, n)
	for i := range n {
		out = append(out, first+i)
	}
	return out, nil
}

// The generator names the sandbox's annotation without importing the sandbox.
func TestJobRuntimeAnnotationIsTheSandboxs(t *testing.T) {
	if workload.JobRuntimeAnnotation != sandbox.JobRuntimeAnnotation {
		t.Fatalf("test/workload sets %q on Job pods; the sandbox reads %q", workload.JobRuntimeAnnotation, sandbox.JobRuntimeAnnotation)
	}
}
