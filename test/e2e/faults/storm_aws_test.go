package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	lifecycleinterruption "github.com/tailor-sh/tailor/pkg/lifecycle/interruption"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestInterruptionStorm: as many interruption notices as there are nodes arrive through SQS in a
// short burst, on the AWS provider against the emulator: spot interruption warnings, instance
// state changes, scheduled changes and rebalance recommendations, a tenth of them sent twice and a
// tenth for instances EC2 does not know. Every notice for a known instance is handled before its
// deadline (the NodeClaim deleted after its node was tainted, or, for a rebalance recommendation,
// only recorded), and the interrupted nodes are drained and gone before it too; each duplicate is
// acted on once; the unknown ones are deleted without effect; the queue ends empty; and every pod
// runs again on a node that was not interrupted. The notices arrive 50 a second whatever the
// size: make test runs 20 nodes, make chaos (TAILOR_CHAOS=1) 500 in 10 s, the size of issue 14;
// TAILOR_STORM_NODES sets another.
func TestInterruptionStorm(t *testing.T) {
	size := stormSize(t)
	burst := time.Duration(size) * time.Second / 50
	e := env.NewAWS(t)
	e.CreateClass(env.AWSClass("default", "al2023@latest", nil))
	pool := env.AWSPool("default", "default")
	pool.Spec.Disruption.ConsolidateAfter = karpv1.NillableDuration{} // Never: only the notices remove nodes
	e.CreateNodePool(pool)
	createOnePerNode(e, "storm", size)
	start := time.Now()
	e.WaitRunning("app=storm", size, 5*time.Minute+time.Duration(size)*3*time.Second)
	t.Logf("%d nodes up with a pod each in %.1f s", size, time.Since(start).Seconds())

	instances := map[string]string{} // instance ID → NodeClaim
	for claim, pid := range e.ClaimInstances() {
		instances[pid[strings.LastIndex(pid, "/")+1:]] = claim
	}
	plan := planStorm(sortedKeys(instances), size)
	nodes := watchNodes(e)

	decisions := interruptionDecisions()
	received, deleted := stormQueueCounts()
	outcomes := noticeOutcomes()

	handled := make(chan []handledAt, 1)
	go func() { handled <- collectHandled(e, len(plan.sends)) }()
	first := sendStorm(e, plan, burst)

	got := <-handled
	if len(got) != len(plan.sends) {
		t.Fatalf("%d of %d notices handled", len(got), len(plan.sends))
	}
	e.WaitFor("the interruption queue to be empty", time.Minute, func() (bool, string) {
		visible, inFlight := e.Emu.QueueDepth(env.AWSQueue)
		return visible+inFlight == 0, fmt.Sprintf("%d visible, %d in flight", visible, inFlight)
	})
	emptied := time.Now()

	// Each notice for a known instance was handled before its deadline; an unknown instance's was
	// found to be nobody's.
	var worst time.Duration
	latest := time.Duration(-1 << 63)
	for _, h := range got {
		if _, known := instances[h.Ev.InstanceID]; known != (h.ProviderID != "") {
			t.Errorf("notice %s for %s: handled as known=%v, but the instance is known=%v", h.Ev.Kind, h.Ev.InstanceID, h.ProviderID != "", known)
		}
		worst = max(worst, h.at.Sub(h.Ev.Time))
		if h.ProviderID == "" {
			continue
		}
		due := dueBy(h.Ev)
		latest = max(latest, h.at.Sub(due))
		if !h.at.Before(due) {
			t.Errorf("%s for %s handled at %s, after its deadline %s", h.Ev.Kind, h.Ev.InstanceID, h.at.Format(time.StampMilli), due.Format(time.StampMilli))
		}
	}

	// Each distinct notice was acted on once, however often it came.
	disrupted, recorded := plan.counts()
	if d := interruptionDecisions() - decisions; d != float64(disrupted) {
		t.Errorf("%v NodeClaims deleted for interruptions, want %d (one per distinct notice that removes a node)", d, disrupted)
	}
	now := noticeOutcomes()
	for outcome, want := range map[string]int{lifecycleinterruption.OutcomeDisrupted: disrupted, lifecycleinterruption.OutcomeRecorded: recorded,
		lifecycleinterruption.OutcomeDuplicate: plan.duplicates, lifecycleinterruption.OutcomeAlreadyRemoving: 0, lifecycleinterruption.OutcomeUnknown: 0} {
		if n := now[outcome] - outcomes[outcome]; n != float64(want) {
			t.Errorf("%v notices %s, want %d", n, outcome, want)
		}
	}
	// The queue empties when the emulator deletes a batch; the consumer counts it once the
	// answer is back.
	var r, d float64
	e.WaitFor("the consumer to count its deletions", 30*time.Second, func() (bool, string) {
		r, d = stormQueueCounts()
		return d-deleted >= float64(len(plan.sends)), fmt.Sprintf("%v deleted", d-deleted)
	})
	if r-received != float64(len(plan.sends)) || d-deleted != float64(len(plan.sends)) {
		t.Errorf("the consumer received %v and deleted %v messages, want %d each: a message was delivered twice or left behind",
			r-received, d-deleted, len(plan.sends))
	}

	// The interrupted nodes were tainted, then drained and deleted before their deadlines; the
	// others, rebalanced ones included, were left alone.
	pods := waitRunningOff(e, "app=storm", size, nodes.names(plan.removed()), 5*time.Minute+time.Duration(size)*2*time.Second)
	// Pods run elsewhere once evicted; the node object goes a moment later, with its instance.
	e.WaitFor("every interrupted node deleted", 2*time.Minute, func() (bool, string) {
		var left []string
		for _, id := range plan.removed() {
			if nodes.of(id).gone.IsZero() {
				left = append(left, id)
			}
		}
		return len(left) == 0, fmt.Sprintf("nodes of %v left", left)
	})
	drainedBy := time.Duration(-1 << 63)
	lastGone := time.Time{}
	handledAt := map[string]time.Time{} // instance → when its first notice was handled
	for _, h := range got {
		if at, ok := handledAt[h.Ev.InstanceID]; !ok || h.at.Before(at) {
			handledAt[h.Ev.InstanceID] = h.at
		}
	}
	var drains []time.Duration // notice handled (claim deleted) → node gone
	for id, claim := range instances {
		n, ok := plan.byInstance[id]
		seen := nodes.of(id)
		switch {
		case ok && n.kind != eventbridge.KindRebalanceRecommendation:
			if seen.tainted.IsZero() {
				t.Errorf("node of %s (%s) went without being tainted %s", claim, id, karpv1.DisruptedTaintKey)
			}
			if seen.gone.IsZero() {
				t.Errorf("node of %s (%s) still exists after %s", claim, id, n.kind)
				continue
			}
			drainedBy = max(drainedBy, seen.gone.Sub(n.due))
			drains = append(drains, seen.gone.Sub(handledAt[id]))
			if seen.gone.After(lastGone) {
				lastGone = seen.gone
			}
			if !seen.gone.Before(n.due) {
				t.Errorf("node of %s (%s) drained at %s, after its %s deadline %s", claim, id, seen.gone.Format(time.StampMilli), n.kind, n.due.Format(time.StampMilli))
			}
		default:
			if !seen.tainted.IsZero() || !seen.gone.IsZero() {
				t.Errorf("node of %s (%s) was disrupted, but its notice was %q", claim, id, n.kind)
			}
		}
	}
	t.Logf("storm of %d notices (%d known instances, %d duplicates, %d unknown) over %s: first notice to queue empty %.1f s; "+
		"notice to handled at most %.1f s; handled %.1f s before the nearest deadline; last interrupted node gone %.1f s after the first notice "+
		"(%.1f s before the nearest deadline); %d pods Running elsewhere %.1f s after the first notice",
		len(plan.sends), len(plan.byInstance), plan.duplicates, plan.unknown, burst, emptied.Sub(first).Seconds(),
		worst.Seconds(), -latest.Seconds(), lastGone.Sub(first).Seconds(), -drainedBy.Seconds(), len(pods), time.Since(first).Seconds())
	if len(drains) > 0 {
		slices.Sort(drains)
		t.Logf("drains of %d interrupted nodes, notice handled to node gone: median %.1f s, 90th percentile %.1f s, longest %.1f s",
			len(drains), drains[len(drains)/2].Seconds(), drains[len(drains)*9/10].Seconds(), drains[len(drains)-1].Seconds())
	}
}

// stormSize is the number of nodes and of notices: TAILOR_STORM_NODES, or 500 under make chaos
// and 20 in make test. At least 20, so that the storm holds each kind, a duplicate and an
// unknown instance.
func stormSize(t *testing.T) int {
	v := os.Getenv("TAILOR_STORM_NODES")
	if v == "" {
		if chaos {
			return 500
		}
		return 20
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 20 {
		t.Fatalf("TAILOR_STORM_NODES=%q: want a number of nodes, at least 20", v)
	}
	return n
}

// createOnePerNode makes a Deployment of n pods that refuse to share a node, so the fleet is n
// nodes with one pod each; evicted pods are replaced by the Deployment.
func createOnePerNode(e *env.AWS, name string, n int) {
	e.T.Helper()
	d := env.DeploymentOf(name, int32(n), "100m", "128Mi")
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}}}
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// stormNotice is one distinct notice of the storm.
type stormNotice struct {
	kind  eventbridge.Kind
	state string
	due   time.Time
}

type stormPlan struct {
	// sends are the message bodies in the order they are sent.
	sends []string
	// byInstance are the distinct notices for known instances.
	byInstance          map[string]*stormNotice
	duplicates, unknown int
}

// stormKinds is the mix: four in ten spot interruptions, four state changes (one of each state
// Tailor acts on), a scheduled change and a rebalance recommendation.
var stormKinds = []struct {
	kind  eventbridge.Kind
	state string
}{
	{eventbridge.KindSpotInterruption, ""}, {eventbridge.KindInstanceStopping, "stopping"},
	{eventbridge.KindSpotInterruption, ""}, {eventbridge.KindScheduledChange, ""},
	{eventbridge.KindInstanceTerminating, "shutting-down"}, {eventbridge.KindSpotInterruption, ""},
	{eventbridge.KindRebalanceRecommendation, ""}, {eventbridge.KindInstanceStopping, "stopped"},
	{eventbridge.KindSpotInterruption, ""}, {eventbridge.KindInstanceTerminating, "terminated"},
}

// planStorm decides, from a fixed seed, which of the known instances get which notice: of size
// notices, a tenth repeat an earlier one, a tenth name instances EC2 never had, and the rest go to
// distinct known instances. The bodies are rendered when sent, stamped with the send time.
func planStorm(known []string, size int) *stormPlan {
	rng := rand.New(rand.NewPCG(14, 5))
	p := &stormPlan{byInstance: map[string]*stormNotice{}, duplicates: size / 10, unknown: size / 10}
	distinct := size - p.duplicates - p.unknown
	targets := append([]string(nil), known...)
	rng.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	var order []string // instance IDs, one per message
	for i, id := range targets[:distinct] {
		k := stormKinds[i%len(stormKinds)]
		p.byInstance[id] = &stormNotice{kind: k.kind, state: k.state}
		order = append(order, id)
	}
	for i := range p.duplicates {
		order = append(order, targets[i*distinct/p.duplicates])
	}
	for i := range p.unknown {
		order = append(order, fmt.Sprintf("i-0feed%012x", i))
	}
	// Whichever copy of a duplicated notice is sent first is the notice; the later one its copy.
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	p.sends = order
	return p
}

// counts is how many distinct notices remove a node, and how many are only recorded.
func (p *stormPlan) counts() (disrupted, recorded int) {
	for _, n := range p.byInstance {
		if n.kind == eventbridge.KindRebalanceRecommendation {
			recorded++
		} else {
			disrupted++
		}
	}
	return disrupted, recorded
}

// removed lists the instances whose nodes must go.
func (p *stormPlan) removed() []string {
	var out []string
	for id, n := range p.byInstance {
		if n.kind != eventbridge.KindRebalanceRecommendation {
			out = append(out, id)
		}
	}
	return out
}

// dueBy is when a notice must be handled by: its deadline, or, for a state change (whose
// deadline is the notice itself: the instance is already going), the spot notice period after it.
func dueBy(ev eventbridge.Event) time.Time {
	if ev.Deadline.After(ev.Time) {
		return ev.Deadline
	}
	return ev.Time.Add(2 * time.Minute)
}

// sendStorm sends the plan's messages through the real SQS API, evenly over burst, and returns
// when the first was sent. Each instance's notice is rendered once, at its first send, so a
// duplicate is the same message body again, as an EventBridge retry or an SQS redelivery is.
func sendStorm(e *env.AWS, p *stormPlan, burst time.Duration) time.Time {
	e.T.Helper()
	cfg, err := tailoraws.SDKConfig(e.Ctx, tailoraws.Options{Endpoint: e.Emu.URL()})
	if err != nil {
		e.T.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	url, err := interruption.QueueURL(e.Ctx, client, env.AWSQueue)
	if err != nil {
		e.T.Fatal(err)
	}
	bodies := map[string]string{}
	var first time.Time
	gap := burst / time.Duration(len(p.sends))
	for i, id := range p.sends {
		body, ok := bodies[id]
		if !ok {
			now := e.Clock.Now()
			n := p.byInstance[id]
			notice := eventbridge.Notice{InstanceID: id, Region: emulator.Region, Account: emulator.AccountID, Time: now,
				Kind: stormKinds[i%len(stormKinds)].kind, State: stormKinds[i%len(stormKinds)].state}
			if n != nil {
				notice.Kind, notice.State = n.kind, n.state
				// A scheduled change gets the spot notice period too, so that its deadline is
				// as tight as a spot interruption's rather than days away.
				notice.Start = now.Add(2 * time.Minute)
			}
			if body, err = eventbridge.Message(notice); err != nil {
				e.T.Fatal(err)
			}
			bodies[id] = body
			if n != nil {
				evs, err := eventbridge.Parse(body)
				if err != nil || len(evs) != 1 {
					e.T.Fatalf("the storm's own notice does not parse: %v %v", evs, err)
				}
				n.due = dueBy(evs[0])
			}
		}
		if first.IsZero() {
			first = time.Now()
		}
		if _, err := client.SendMessage(e.Ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			e.T.Fatalf("sending notice %d: %v", i, err)
		}
		time.Sleep(time.Until(first.Add(time.Duration(i+1) * gap)))
	}
	return first
}

type handledAt struct {
	env.HandledNotice
	at time.Time
}

// collectHandled gathers n handled notices, with the time each was handled, or stops when none
// comes for three minutes.
func collectHandled(e *env.AWS, n int) []handledAt {
	var out []handledAt
	for len(out) < n {
		select {
		case h := <-e.Interrupted:
			out = append(out, handledAt{h, time.Now()})
		case <-time.After(3 * time.Minute):
			return out
		case <-e.Ctx.Done():
			return out
		}
	}
	return out
}

func interruptionDecisions() float64 {
	return testutil.ToFloat64(metrics.DisruptionDecisions.WithLabelValues("replace", "interruption", "Interrupted", "default")) +
		testutil.ToFloat64(metrics.DisruptionDecisions.WithLabelValues("delete", "interruption", "Interrupted", "default"))
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
