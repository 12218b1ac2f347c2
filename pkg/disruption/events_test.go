package disruption

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// A pass says why it left each node alone: a node annotated do-not-disrupt is blocked; a node of
// a WhenEmpty pool that holds a pod, and one whose pod can run nowhere else, are unconsolidatable;
// a pool whose budget is 0 blocks every reason. The loop's own nodes on their way out, and a node
// not initialized yet, are not blocked: they are no candidates for a moment only.
func TestDecideSaysWhyNodesAreLeftAlone(t *testing.T) {
	c := newCluster(t, newPool("default", budget("10")), newPool("empty-only", whenEmpty(), budget("10")), newPool("frozen", budget("0")))
	c.node("held", "default", odXLarge, nodeAnnotated(karpv1.DoNotDisruptAnnotationKey, "true"))
	c.node("pinned", "default", odXLarge)
	c.pod("stays", "pinned", "500m", "512Mi", pinnedTo("pinned"))
	c.node("busy", "empty-only", odXLarge)
	c.pod("work", "busy", "500m", "512Mi")
	c.node("going", "default", odXLarge, nodeTainted(karpv1.DisruptedNoScheduleTaint))
	c.node("new", "default", odXLarge, uninitialized())
	c.node("ice", "frozen", odXLarge)
	c.pod("cold", "ice", "500m", "512Mi")

	cmd, report := Decide(context.Background(), c.State, testPlanner(t), map[string]bool{"going": true}, decideOpts(15))
	if cmd != nil {
		t.Fatalf("got %s, want no command", describe(cmd))
	}
	if why := report.Blocked["held"]; !strings.Contains(why, karpv1.DoNotDisruptAnnotationKey) {
		t.Errorf("held: blocked %q, want the do-not-disrupt annotation named", why)
	}
	if why, ok := report.Blocked["going"]; ok {
		t.Errorf("going, a node the loop is removing, is reported blocked: %q", why)
	}
	if why, ok := report.Blocked["new"]; ok {
		t.Errorf("new, a node not initialized yet, is reported blocked: %q", why)
	}
	if why := report.Unconsolidatable["busy"]; why != `NodePool "empty-only" has consolidation policy WhenEmpty, but node is not empty` {
		t.Errorf("busy: unconsolidatable %q", why)
	}
	if why := report.Unconsolidatable["pinned"]; why == "" {
		t.Errorf("pinned: no reason given, want why its pod cannot move; report %+v", report.Unconsolidatable)
	}
	if !slices.Contains(report.ClosedBudgets, poolReason{"frozen", karpv1.DisruptionReasonUnderutilized}) ||
		slices.ContainsFunc(report.ClosedBudgets, func(k poolReason) bool { return k.pool != "frozen" }) {
		t.Errorf("closed budgets %v, want frozen's alone", report.ClosedBudgets)
	}
}

// Blocked and Unconsolidatable go on the Node and the NodeClaim, and the budget's Event on the
// NodePool; a pass a moment later writes none of them again, unless the reason changed. Past two
// minutes DisruptionBlocked is written again; Unconsolidatable waits fifteen minutes, and the
// budget's Event one.
func TestExplainWritesEachEventOncePerPeriod(t *testing.T) {
	c := newCluster(t, newPool("default", budget("0")))
	c.node("n1", "default", odXLarge)
	clk := clocktesting.NewFakeClock(testNow)
	rec := events.NewFakeRecorder(100)
	ctl := New(Options{Recorder: rec, Clock: clk})
	report := Report{Blocked: map[string]string{"n1": "pods are nominated to it"},
		Unconsolidatable: map[string]string{"n1": "Can't replace with a cheaper node"},
		ClosedBudgets:    []poolReason{{"default", karpv1.DisruptionReasonDrifted}}}
	pass := func() []string {
		ctl.explain(c.State, report)
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				slices.Sort(out)
				return out
			}
		}
	}
	want := []string{
		"Normal DisruptionBlocked Disruption is blocked: pods are nominated to it",
		"Normal DisruptionBlocked Disruption is blocked: pods are nominated to it",
		"Normal DisruptionBlocked No allowed disruptions for disruption reason Drifted due to blocking budget",
		"Normal Unconsolidatable Can't replace with a cheaper node",
		"Normal Unconsolidatable Can't replace with a cheaper node",
	}
	if got := pass(); !slices.Equal(got, want) {
		t.Fatalf("first pass:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	clk.Step(10 * time.Second)
	if got := pass(); len(got) != 0 {
		t.Fatalf("a pass 10s later wrote %q", got)
	}
	// Another reason is another Event: it is not held back behind the first.
	report.Blocked["n1"] = "it is annotated karpenter.sh/do-not-disrupt"
	if got := pass(); len(got) != 2 || !strings.HasSuffix(got[0], "it is annotated karpenter.sh/do-not-disrupt") {
		t.Fatalf("a new reason 10s later wrote %q, want it on the Node and the NodeClaim", got)
	}
	report.Blocked["n1"] = "pods are nominated to it"
	clk.Step(2 * time.Minute)
	want = []string{
		"Normal DisruptionBlocked Disruption is blocked: pods are nominated to it",
		"Normal DisruptionBlocked Disruption is blocked: pods are nominated to it",
		"Normal DisruptionBlocked No allowed disruptions for disruption reason Drifted due to blocking budget",
	}
	if got := pass(); !slices.Equal(got, want) {
		t.Fatalf("a pass past 2m:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The Events of a command: DisruptionLaunching and DisruptionWaitingReadiness on a replacement,
// DisruptionTerminating on the Node and the NodeClaim going, each message naming its object as
// Karpenter's do, followed by what the command does.
func TestCommandEventsUseKarpentersReasons(t *testing.T) {
	c := newCluster(t, newPool("default"))
	c.node("n1", "default", od2XLarge)
	rec := events.NewFakeRecorder(10)
	ctl := New(Options{Recorder: rec, Clock: clocktesting.NewFakeClock(testNow)})
	cand := candidate(t, c.State, "n1")
	cmd := &Command{Reason: karpv1.DisruptionReasonUnderutilized, Method: "single-node consolidation", Candidates: []*Candidate{cand}, Savings: 0.19}
	ctl.launching(c.Claims[0], cmd)
	ctl.terminating(cand, cmd)
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := []string{
		"Normal DisruptionLaunching Launching NodeClaim: Underutilized",
		"Normal DisruptionWaitingReadiness Waiting on readiness to continue disruption",
		"Normal DisruptionTerminating Disrupting Node: Underutilized, deleting m6i.2xlarge, saves $0.19/h",
		"Normal DisruptionTerminating Disrupting NodeClaim: Underutilized, deleting m6i.2xlarge, saves $0.19/h",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The Event holds of a large fleet (two keys a node, each held for minutes) are more than the
// sweep's floor: keys whose hold ended are still dropped, but not on every new key.
func TestDedupeDropsEndedHoldsAsItGrows(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	d := newDedupe(clk)
	for i := range 25000 {
		if !d.allow(fmt.Sprintf("old-%d", i), time.Minute) {
			t.Fatalf("key %d refused the first time", i)
		}
	}
	if d.allow("old-7", time.Minute) {
		t.Fatal("a key held for a minute was allowed again at once")
	}
	clk.Step(2 * time.Minute)
	for i := range 20000 {
		d.allow(fmt.Sprintf("new-%d", i), time.Minute)
	}
	if n := len(d.until); n > 20000 {
		t.Errorf("%d keys held after 20,000 new ones, with the 25,000 old ones' holds ended; want the old ones dropped", n)
	}
	if !d.allow("old-7", time.Minute) {
		t.Error("a key whose hold ended was refused")
	}
}

// BenchmarkDedupeAllowNew is the check of an Event not written yet (a node just initialized,
// a reason that changed) beside the holds of a fleet: twice the sweep's floor, all in force.
func BenchmarkDedupeAllowNew(b *testing.B) {
	d := newDedupe(clocktesting.NewFakeClock(time.Now()))
	for i := range 20000 {
		d.allow(fmt.Sprintf("held-%d", i), time.Hour)
	}
	i := 0
	for b.Loop() {
		d.allow("new-"+strconv.Itoa(i), time.Hour)
		i++
	}
}
