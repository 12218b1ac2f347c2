package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	"github.com/tailor-sh/tailor/test/workload"
)

// OutEnv names the folder failing seeds' manifests go to (default: the system's temp folder).
const OutEnv = "HARNESS_OUT"

// Timeouts of one seed's halves; a scenario that has not settled by then fails with its state.
const (
	settleTimeout = 90 * time.Second
	// quietUp and quietDown are how long nothing may change before the cluster counts as
	// settled. After the scale-down, consolidation acts in rounds (consolidateAfter 1 s, poll 1 s,
	// validation 1 s), so the quiet must outlast a round.
	quietUp   = 3 * time.Second
	quietDown = 8 * time.Second
)

// RunSeed generates the scenario of seed, runs it through a fresh sandbox on the seed's cloud,
// and fails t with every broken invariant, the seed, and the command that reproduces it.
func RunSeed(t *testing.T, seed uint64) {
	run := &seedRun{t: t, seed: seed, s: workload.Generate(seed), which: cloudFor(seed)}
	t.Logf("%s, cloud %s", run.s.Summary(), run.which)
	run.dir = filepath.Join(t.TempDir(), "manifests")
	if err := run.s.Write(run.dir); err != nil {
		t.Fatal(err)
	}
	budget := 4 * time.Minute
	if drifts(seed) {
		budget += driftBudget
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	defer func() {
		if len(run.findings) > 0 {
			report(t, run.s, run.which, run.findings, evidence(ctx, run.cluster, run.last, run.findings, run.related))
		}
	}()
	run.cluster = Start(t, run.which)
	if err := sandbox.ApplyFiles(ctx, run.cluster.Config, []string{run.dir}, nil); err != nil {
		t.Fatalf("seed %d: applying the scenario: %v", seed, err)
	}
	up := run.scaleUp(ctx)
	if up == nil {
		return
	}
	down, want := run.scaleDown(ctx, up)
	if down == nil || !drifts(seed) {
		return
	}
	r3, more := driftAll(ctx, t, run.cluster, down, want)
	run.findings = append(run.findings, more...)
	if r3 != nil {
		run.last = r3
	}
}

// seedRun is one seed's scenario on its sandbox, and what it found so far.
type seedRun struct {
	t       *testing.T
	seed    uint64
	s       *workload.Scenario
	which   Cloud
	dir     string // the scenario's manifests
	cluster *sandbox.Cluster
	// findings are the broken invariants; related, objects whose events explain a finding
	// besides those it names; last, the latest reading of the cluster, for the evidence.
	findings []Finding
	related  []string
	last     *Reading
}

// check adds the invariants r breaks, their names suffixed.
func (run *seedRun) check(ctx context.Context, r *Reading, suffix string) {
	f, err := NewFitter(ctx, run.cluster.Cloud, r)
	if err != nil {
		run.t.Fatalf("seed %d: %v", run.seed, err)
	}
	for _, fd := range Check(ctx, r, f) {
		fd.Check += suffix
		run.findings = append(run.findings, fd)
	}
}

// scaleUp waits for the scenario's pods to settle and checks the fleet, and its price against
// `tailor plan` of the same manifests; nil when nothing could be read.
func (run *seedRun) scaleUp(ctx context.Context) *Reading {
	r, err := settle(ctx, run.cluster, run.s.Pods(), quietUp, false)
	if err != nil {
		run.findings = append(run.findings, Finding{"not-settled", "cluster", err.Error()})
	}
	if r == nil {
		return nil
	}
	run.last = r
	run.check(ctx, r, "")
	run.findings = append(run.findings, comparePrice(ctx, run.t, run.cluster, r, run.dir, run.which)...)
	return r
}

// scaleDown scales the Deployments down, waits for consolidation to settle, and checks the
// fleet, the PodDisruptionBudgets throughout, and that no pod that ran is left Pending. It
// returns the reading (nil when nothing could be read) and how many pods are wanted now.
func (run *seedRun) scaleDown(ctx context.Context, up *Reading) (*Reading, int) {
	pdbs := WatchPDBs(ctx, run.cluster.Kube, workload.Namespace)
	want := run.s.Pods()
	for _, d := range run.s.Deployments {
		to := run.s.ScaleTo[d.Name]
		want -= int(*d.Spec.Replicas - to)
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, to)
		if _, err := run.cluster.Kube.AppsV1().Deployments(workload.Namespace).Patch(ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			run.t.Fatalf("seed %d: scaling %s down: %v", run.seed, d.Name, err)
		}
	}
	r, err := settle(ctx, run.cluster, want, quietDown, true)
	if err != nil {
		run.findings = append(run.findings, Finding{"not-settled-after-scale-down", "cluster", err.Error()})
	}
	checked := run.checkBudgets(ctx, pdbs)
	if r == nil {
		return nil, want
	}
	run.last = r
	disruptions, err := ReadDisruptions(ctx, run.cluster.Kube)
	if err != nil {
		run.t.Logf("seed %d: %v", run.seed, err)
	}
	for _, fd := range RanThenPending(up, r, disruptions) {
		fd.Check += "-after-scale-down"
		run.findings = append(run.findings, fd)
	}
	run.check(ctx, r, "-after-scale-down")
	run.t.Logf("seed %d: scale-up %d nodes, scale-down %d nodes; %d of %d PDBs checked throughout", run.seed, len(up.launched()), len(r.launched()), checked, len(run.s.PDBs))
	return r, want
}

// checkBudgets stops watching the PodDisruptionBudgets and adds each violation that was not the
// scheduler's preemption; it returns how many budgets were checked.
func (run *seedRun) checkBudgets(ctx context.Context, pdbs *PDBWatch) int {
	violations, checked := pdbs.Stop()
	violations, excused, err := tailorsShare(ctx, run.cluster.Kube, workload.Namespace, violations)
	if err != nil {
		run.t.Logf("seed %d: reading who preempted the budgets' pods: %v", run.seed, err)
	}
	if len(excused) > 0 {
		run.t.Logf("seed %d: %d readings below a PodDisruptionBudget follow the scheduler's preemption, not counted; the first: %s", run.seed, len(excused), excused[0])
	}
	for _, v := range violations {
		run.findings = append(run.findings, Finding{"pdb-violated", "PodDisruptionBudget", v.Detail})
		run.related = append(run.related, v.Members...)
	}
	return checked
}

// comparePrice checks the live fleet against `tailor plan` of the same manifests.
func comparePrice(ctx context.Context, t *testing.T, cluster *sandbox.Cluster, r *Reading, dir string, which Cloud) []Finding {
	planned, err := PlanPrice(ctx, dir, which)
	if err != nil {
		t.Fatalf("planning the scenario offline: %v", err)
	}
	live := FleetPrice(ctx, cluster.Cloud, r)
	t.Logf("fleet $%.4f/h on %d nodes; plan $%.4f/h on %d NodeClaims (%d unplaceable), bound $%.4f/h; live/plan %.3f",
		live, len(r.launched()), planned.PricePerHour, len(planned.NodeClaims), len(planned.Unplaceable), planned.LowerBoundPerHour, live/max(planned.PricePerHour, 1e-9))
	if pending := len(r.Pending()); len(planned.Unplaceable) > pending {
		// The live fleet holds pods the plan left out: a NodePool limit counts a claim at the
		// largest type it may launch as until it has launched (as Karpenter's does), so an
		// all-at-once plan runs into limits that launched nodes, at their real size, leave room
		// under. A dearer fleet that holds more pods is no fault of price.
		t.Logf("price not compared: the plan leaves %d pods out, the fleet %d", len(planned.Unplaceable), pending)
		return nil
	}
	if live > planned.PricePerHour*PriceTolerance+1e-6 {
		return []Finding{{"price", "fleet", fmt.Sprintf("live fleet $%.4f/h is %.2f x the plan's $%.4f/h (tolerance %.2f)",
			live, live/planned.PricePerHour, planned.PricePerHour, PriceTolerance)}}
	}
	return nil
}

// settle waits until the workloads have made want pods, every pod runs, finished or is explained,
// every NodeClaim is initialized, and nothing changed for quiet. With consolidating, it also waits
// (up to settleTimeout) for nodes left without workload pods to go: the disruption loop removes
// them in rounds, one budget at a time, and the unused-node check then fails only on those it
// left. It returns the last reading either way.
func settle(ctx context.Context, cluster *sandbox.Cluster, want int, quiet time.Duration, consolidating bool, until ...func(*Reading) string) (*Reading, error) {
	deadline := time.Now().Add(settleTimeout)
	var last *Reading
	var since time.Time
	fingerprint, why := "", ""
	for time.Now().Before(deadline) {
		select {
		case err := <-cluster.SchedulerErr():
			return last, fmt.Errorf("the scheduler (Tailor) exited: %v", err)
		default:
		}
		r, err := Read(ctx, cluster)
		if err != nil {
			return last, err
		}
		last = r
		if fp := r.Fingerprint(); fp != fingerprint {
			fingerprint, since = fp, time.Now()
		}
		why = unsettled(r, want)
		if unused := unusedNodes(r); why == "" && consolidating && len(unused) > 0 {
			why = "waiting for consolidation to remove " + unused[0].Object
		}
		for _, u := range until {
			if why == "" {
				why = u(r)
			}
		}
		if why == "" && time.Since(since) >= quiet {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return last, fmt.Errorf("not settled within %s: %s", settleTimeout, why)
}

// unsettled says what is still happening, or "".
func unsettled(r *Reading, want int) string {
	have := 0
	succeededHere := map[string]int32{} // Job name -> its succeeded pods still listed
	for _, p := range r.Pods {
		if p.Namespace == workload.Namespace && !scheduling.IsDaemonSetPod(&p) && p.DeletionTimestamp == nil {
			have++
			if job := jobOf(&p); job != "" && p.Status.Phase == corev1.PodSucceeded {
				succeededHere[job]++
			}
		}
	}
	// A Job's succeeded pod is gone once consolidation removed its node: it counts as there.
	for _, j := range r.Jobs {
		if j.Namespace == workload.Namespace && j.Status.Succeeded > succeededHere[j.Name] {
			have += int(j.Status.Succeeded - succeededHere[j.Name])
		}
	}
	if have != want {
		return fmt.Sprintf("%d workload pods, want %d", have, want)
	}
	for _, c := range r.Claims {
		if c.DeletionTimestamp != nil {
			// Its Drained condition says what the drain waits on (a PodDisruptionBudget, a pod
			// with no place), which tells a drain that cannot finish from one that is slow.
			if d := c.GetCondition(karpv1.ConditionTypeDrained); d != nil && d.Status != metav1.ConditionTrue && d.Message != "" {
				return fmt.Sprintf("NodeClaim %s is being deleted (Drained=%s %s: %s)", c.Name, d.Status, d.Reason, d.Message)
			}
			return "NodeClaim " + c.Name + " is being deleted"
		}
	}
	if !r.Settled() {
		var pending []string
		for _, p := range r.Pending() {
			pending = append(pending, key(p))
		}
		return fmt.Sprintf("sandbox not settled (pending: %s)", strings.Join(pending, " "))
	}
	return ""
}

// report fails t with the findings, writes the scenario where it outlives the test, and prints
// the command that replays it.
func report(t *testing.T, s *workload.Scenario, which Cloud, findings []Finding, evidence string) {
	base := os.Getenv(OutEnv)
	if base == "" {
		base = filepath.Join(os.TempDir(), "tailor-harness")
	}
	dir := filepath.Join(base, fmt.Sprintf("seed-%d", s.Seed))
	if err := s.Write(dir); err != nil {
		t.Errorf("writing the failing scenario: %v", err)
	}
	var b strings.Builder
	checks := make([]string, 0, len(findings))
	for _, f := range findings {
		b.WriteString("\n  " + f.String())
		if !slices.Contains(checks, f.Check) {
			checks = append(checks, f.Check)
		}
	}
	// The checks' names head the first line: a CI excerpt that keeps one line of the failure
	// still says what broke.
	t.Errorf("seed %d FAILED [%s] (%s, cloud %s): %d findings:%s\nevidence:\n  %s\nreproduce: go run ./cmd/tailor sandbox --cloud %s --apply %s --until-settled --report json",
		s.Seed, strings.Join(checks, " "), s.Summary(), which, len(findings), b.String(), evidence, which, dir)
}

// jobOf names the Job that owns pod, or "".
func jobOf(pod *corev1.Pod) string {
	for _, o := range pod.OwnerReferences {
		if o.Kind == "Job" {
			return o.Name
		}
	}
	return ""
}
