package provisioning

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// podLatency is what the scale-up's pods say about their binding, read from the API server's
// own stamps: a pod's creationTimestamp and its PodScheduled condition's lastTransitionTime, which
// the binding sets. Both are to the second, so every figure is within a second.
type podLatency struct {
	lastCreated, lastBound time.Time
	// p50 and p90 are of each pod's creation to its binding.
	p50, p90 time.Duration
}

func measurePods(ctx context.Context, cluster *sandbox.Cluster) (podLatency, error) {
	var out podLatency
	list, err := cluster.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=fleet"})
	if err != nil {
		return out, err
	}
	var waits []time.Duration
	for _, p := range list.Items {
		created := p.CreationTimestamp.Time
		out.lastCreated = later(out.lastCreated, created)
		bound, ok := scheduledAt(&p)
		if !ok {
			continue // waitDeployment saw every pod Ready: none is left unbound
		}
		out.lastBound = later(out.lastBound, bound)
		waits = append(waits, bound.Sub(created))
	}
	slices.Sort(waits)
	out.p50, out.p90 = quantile(waits, 0.5), quantile(waits, 0.9)
	return out, nil
}

func scheduledAt(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// quantile of sorted durations (nearest rank); 0 of none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// claimTimes is when the benchmark's informer saw a NodeClaim reach each step of its removal:
// chosen for disruption (its DisruptionReason condition, or its deletion if nothing chose it),
// drained (Drained True), and gone. Zero where it was not seen.
type claimTimes struct{ decided, drained, gone time.Time }

// observe records the steps cur shows that were not seen before.
func (t *claimTimes) observe(cur *karpv1.NodeClaim, now time.Time) {
	if t.decided.IsZero() && (cur.IsTrue(karpv1.ConditionTypeDisruptionReason) || cur.DeletionTimestamp != nil) {
		t.decided = now
	}
	if t.drained.IsZero() && cur.IsTrue(karpv1.ConditionTypeDrained) {
		t.drained = now
	}
}

// consolidationPhases splits [from, to] into the time some node was draining (chosen, not yet
// drained), the time none was but some was terminating (drained, not yet gone), and the rest:
// time with no command in flight, which is Tailor deciding (and validating) the next. The three
// add up to to - from.
type consolidationPhases struct{ deciding, draining, terminating time.Duration }

func (w *claimWatch) phases(from, to time.Time) consolidationPhases {
	w.mu.Lock()
	defer w.mu.Unlock()
	type edge struct {
		at          time.Time
		drain, term int
	}
	var edges []edge
	for _, t := range w.times {
		if t.decided.IsZero() || t.decided.Before(from) {
			continue
		}
		gone := t.gone
		if gone.IsZero() {
			gone = to
		}
		drained := t.drained
		if drained.IsZero() {
			drained = gone // drained and gone between two of the informer's looks
		}
		edges = append(edges, edge{t.decided, 1, 0}, edge{drained, -1, 1}, edge{gone, 0, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int { return a.at.Compare(b.at) })
	var out consolidationPhases
	drain, term, prev := 0, 0, from
	account := func(until time.Time) {
		until = earlier(until, to)
		d := max(0, until.Sub(prev))
		switch {
		case drain > 0:
			out.draining += d
		case term > 0:
			out.terminating += d
		default:
			out.deciding += d
		}
		prev = later(prev, until)
	}
	for _, e := range edges {
		account(e.at)
		drain, term = drain+e.drain, term+e.term
	}
	account(to)
	return out
}

// perClaim is what tailor-scheduler wrote per NodeClaim it created: status writes, writes of the
// NodeClaim itself (finalizer, labels) and Events (the pods' Nominated among them).
type perClaim struct{ status, object, events float64 }

func (p *countingProxy) perClaim() perClaim {
	p.mu.Lock()
	defer p.mu.Unlock()
	created := float64(max(1, p.counts["POST nodeclaims"]))
	c := p.counts
	return perClaim{
		status: float64(c["PUT nodeclaims/status"]+c["PATCH nodeclaims/status"]) / created,
		object: float64(c["PUT nodeclaims"]+c["PATCH nodeclaims"]) / created,
		events: float64(c["POST events"]+c["PATCH events"]) / created,
	}
}

// rates lists every kind of request with its rate over elapsed, most frequent first.
func (p *countingProxy) rates(elapsed time.Duration) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(p.counts), func(a, b string) int { return p.counts[b] - p.counts[a] })
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %.2f/s (%d)", k, float64(p.counts[k])/elapsed.Seconds(), p.counts[k]))
	}
	return strings.Join(out, ", ")
}

// Two claims overlap: one drains over [1 s, 3 s) and terminates until 4 s, the other is chosen at
// 2 s and drains until 6 s, gone at 7 s; a third was chosen before the window and is left out.
// From 0 to 10 s: deciding [0, 1) and [7, 10), draining [1, 6), terminating only [6, 7).
func TestConsolidationPhasesPartitionTheWindow(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000+int64(s), 0) }
	w := &claimWatch{times: map[string]*claimTimes{
		"a":      {decided: at(1), drained: at(3), gone: at(4)},
		"b":      {decided: at(2), drained: at(6), gone: at(7)},
		"before": {decided: at(-5), drained: at(-4), gone: at(-3)},
	}}
	got := w.phases(at(0), at(10))
	want := consolidationPhases{deciding: 4 * time.Second, draining: 5 * time.Second, terminating: time.Second}
	if got != want {
		t.Errorf("phases = %+v, want %+v", got, want)
	}
}
