package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailormetrics "github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// podSteps is where a pod of the scale-up spent the time from its creation to its binding, step
// by step along the NodeClaim whose node it bound to: each step's start and end are stamps the
// API server keeps (creation timestamps, conditions' lastTransitionTime), to the second. A pod
// that bound to a node whose claim came before it waited on nothing of that claim's: its steps
// before its binding count as none.
type podSteps struct {
	// planned: the pod's creation to its claim's creation (Tailor's provisioner).
	planned time.Duration
	// launched: the claim's creation to Launched (Tailor's lifecycle and the sandbox's cloud).
	launched time.Duration
	// joined: Launched to the Node's creation (the fake cloud's boot and its kubelet's join); none
	// when the node came first, as it does when the cloud boots nothing: the fake kubelet joins
	// as soon as the launch returns, before Tailor writes Launched.
	joined time.Duration
	// registered: the later of Launched and the Node's creation to the claim's Registered
	// (Tailor's lifecycle, which needs both).
	registered time.Duration
	// ready: the Node's creation to its Ready condition (kwok playing the kubelet).
	ready time.Duration
	// initialized: the later of Registered and Ready to the claim's Initialized (Tailor); none
	// when both came in one pass, which stamps Initialized just before Registered.
	initialized time.Duration
	// bound: the later of the pod's creation and Initialized to its binding (the scheduler).
	bound time.Duration
}

// fleetStep names one of podSteps' fields for the report.
type fleetStep struct {
	name, what string
	of         func(podSteps) time.Duration
}

var fleetSteps = []fleetStep{
	{"planned", "pod created -> its NodeClaim created", func(s podSteps) time.Duration { return s.planned }},
	{"launched", "NodeClaim created -> Launched", func(s podSteps) time.Duration { return s.launched }},
	{"joined", "Launched -> Node created", func(s podSteps) time.Duration { return s.joined }},
	{"registered", "Launched and Node created -> Registered", func(s podSteps) time.Duration { return s.registered }},
	{"ready", "Node created -> Node Ready", func(s podSteps) time.Duration { return s.ready }},
	{"initialized", "Registered and Ready -> Initialized", func(s podSteps) time.Duration { return s.initialized }},
	{"bound", "Initialized -> pod bound", func(s podSteps) time.Duration { return s.bound }},
}

// stepQuantiles is the p50 and p90 of each of fleetSteps over the pods, in its order.
type stepQuantiles struct {
	p50, p90 []time.Duration
	// pods is how many pods were broken down; missing, how many bound to a node with no claim
	// (or a claim without the conditions) left to read.
	pods, missing int
}

// measureSteps lists the fleet's pods, nodes and NodeClaims once, after the scale-up, and breaks
// each bound pod's wait down into fleetSteps.
func measureSteps(ctx context.Context, cluster *sandbox.Cluster) (stepQuantiles, error) {
	var out stepQuantiles
	pods, err := cluster.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=fleet"})
	if err != nil {
		return out, err
	}
	nodes, err := cluster.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	claims, err := cluster.Tailor.KarpenterV1().NodeClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	nodeByName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		nodeByName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	claimByNode := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		if c := &claims.Items[i]; c.Status.NodeName != "" {
			claimByNode[c.Status.NodeName] = c
		}
	}
	var all []podSteps
	for i := range pods.Items {
		p := &pods.Items[i]
		s, ok := stepsOf(p, nodeByName[p.Spec.NodeName], claimByNode[p.Spec.NodeName])
		if !ok {
			out.missing++
			continue
		}
		all = append(all, s)
	}
	out.pods = len(all)
	for _, st := range fleetSteps {
		d := make([]time.Duration, 0, len(all))
		for _, s := range all {
			d = append(d, st.of(s))
		}
		slices.Sort(d)
		out.p50, out.p90 = append(out.p50, quantile(d, 0.5)), append(out.p90, quantile(d, 0.9))
	}
	return out, nil
}

// stepsOf breaks down one pod's wait; false if the pod is unbound or its node or claim lacks a
// stamp.
func stepsOf(p *corev1.Pod, node *corev1.Node, claim *karpv1.NodeClaim) (podSteps, bool) {
	bound, ok := scheduledAt(p)
	if !ok || node == nil || claim == nil {
		return podSteps{}, false
	}
	launched, ok1 := conditionTrueAt(claim, karpv1.ConditionTypeLaunched)
	registered, ok2 := conditionTrueAt(claim, karpv1.ConditionTypeRegistered)
	initialized, ok3 := conditionTrueAt(claim, karpv1.ConditionTypeInitialized)
	ready, ok4 := nodeReadyAt(node)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return podSteps{}, false
	}
	created, claimed, joined := p.CreationTimestamp.Time, claim.CreationTimestamp.Time, node.CreationTimestamp.Time
	if claimed.Before(created) {
		// The pod came to capacity already on its way or there: only its binding waited on it.
		return podSteps{bound: bound.Sub(later(created, initialized))}, true
	}
	return podSteps{
		planned:     claimed.Sub(created),
		launched:    launched.Sub(claimed),
		joined:      max(0, joined.Sub(launched)),
		registered:  registered.Sub(later(launched, joined)),
		ready:       ready.Sub(joined),
		initialized: max(0, initialized.Sub(later(registered, ready))),
		bound:       bound.Sub(later(created, initialized)),
	}, true
}

func conditionTrueAt(claim *karpv1.NodeClaim, t string) (time.Time, bool) {
	c := claim.GetCondition(t)
	if c == nil || c.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// nodeReadyAt is when the node last became Ready. kwok's heartbeats renew lastHeartbeatTime and
// leave lastTransitionTime alone, so this is the node's first Ready unless it flapped.
func nodeReadyAt(n *corev1.Node) (time.Time, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// report says each step's p50 and p90 in a fleetscale: line and as the benchmark's figures
// (s-step-NAME-p50, s-step-NAME-p90).
func (q stepQuantiles) report(b *testing.B) {
	parts := make([]string, 0, len(fleetSteps))
	for i, st := range fleetSteps {
		parts = append(parts, fmt.Sprintf("%s p50 %.0f s, p90 %.0f s", st.what, q.p50[i].Seconds(), q.p90[i].Seconds()))
		b.ReportMetric(q.p50[i].Seconds(), "s-step-"+st.name+"-p50")
		b.ReportMetric(q.p90[i].Seconds(), "s-step-"+st.name+"-p90")
	}
	say("each pod's wait by step (%d pods, %d without a claim to read; to the second): %s", q.pods, q.missing, strings.Join(parts, "; "))
}

// A pod created at 0 whose claim is created at 1, Launched at 2, its node created at 4, Ready at
// 5, Registered at 6, Initialized at 7, bound at 9: each step is the gap to the one it waits on.
// A pod created at 20 on the same claim waited only on its binding, from its own creation.
func TestStepsOfFollowTheClaim(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(1000+int64(s), 0)) }
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(1)}}
	claim.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", at(2).Time)
	claim.SetCondition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "", at(6).Time)
	claim.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", at(7).Time)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(4)}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: at(5)}}}}
	pod := func(created, bound int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(created)}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(bound)}}}}
	}
	s, ok := stepsOf(pod(0, 9), node, claim)
	want := podSteps{planned: time.Second, launched: time.Second, joined: 2 * time.Second, registered: 2 * time.Second,
		ready: time.Second, initialized: time.Second, bound: 2 * time.Second}
	if !ok || s != want {
		t.Errorf("stepsOf = %+v, %v; want %+v", s, ok, want)
	}
	if s, ok := stepsOf(pod(20, 23), node, claim); !ok || s != (podSteps{bound: 3 * time.Second}) {
		t.Errorf("a pod after its claim: stepsOf = %+v, %v; want only 3 s bound", s, ok)
	}
	if _, ok := stepsOf(pod(0, 9), node, nil); ok {
		t.Error("a pod without a claim was broken down")
	}
}

// etcdDisk says how many times etcd, in this process, synced its log and committed its backend
// to disk and how long each took on average, from its own metrics: on a machine whose disk other
// work shares, every write the API server answers waits on them.
func etcdDisk() string {
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, f := range families {
		switch f.GetName() {
		case "etcd_disk_wal_fsync_duration_seconds", "etcd_disk_backend_commit_duration_seconds":
		default:
			continue
		}
		var n uint64
		var sum float64
		for _, m := range f.GetMetric() {
			n += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
		out = append(out, fmt.Sprintf("%s %d, mean %.1f ms", strings.TrimPrefix(f.GetName(), "etcd_disk_"), n, 1000*sum/float64(max(n, 1))))
	}
	return strings.Join(out, "; ")
}

// wakeUps says how often a pod was still pending beside the node that came up for it: woken
// into the scheduler's active queue a few seconds after, or found stranded and planned again
// (Tailor's counters), and how the scheduler's attempts ended (its own), all in this process.
func wakeUps() string {
	out := fmt.Sprintf("woken %.0f, stranded %.0f, nodes unused %.0f", testutil.ToFloat64(tailormetrics.PodsWoken),
		testutil.ToFloat64(tailormetrics.PodsStrandedTotal), testutil.ToFloat64(tailormetrics.NodesUnusedTotal))
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out + "; " + err.Error()
	}
	for _, f := range families {
		// A controller's errors are its conflicts, mostly: a write from a cache that was behind.
		what := map[string]string{"scheduler_schedule_attempts_total": "result", "controller_runtime_reconcile_errors_total": "controller"}[f.GetName()]
		if what == "" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() != what:
				case what == "result":
					out += fmt.Sprintf(", scheduler attempts %s %.0f", l.GetValue(), m.GetCounter().GetValue())
				case m.GetCounter().GetValue() > 0:
					out += fmt.Sprintf(", %s reconcile errors %.0f", l.GetValue(), m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}
