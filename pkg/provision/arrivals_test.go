package provision

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestOnlyArrivingPodsHoldABatchOpen checks how each change to a pod reaches the batcher: a pod
// that has just become provisionable extends the batch, a pod newly known to need capacity opens
// one without the nudges' gap, any other change to one only opens a batch, and a pod that is not
// Tailor's to plan asks for nothing.
func TestOnlyArrivingPodsHoldABatchOpen(t *testing.T) {
	gated := func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}} }
	unschedulable := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	nominated := func(p *corev1.Pod) { p.Status.NominatedNodeName = "node-a" }
	bound := func(p *corev1.Pod) { p.Spec.NodeName = "node-a" }
	otherScheduler := func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler" }
	cases := []struct {
		name     string
		old, pod *corev1.Pod
		enqueue  bool // handed over by PostFilter rather than seen by the informer
		// known says the provisioner already knew the pod needed capacity.
		known bool
		want  string
	}{
		{name: "a pod created", pod: newPod("a", "1", "1Gi"), want: "trigger"},
		{name: "a pod's last scheduling gate removed", old: newPod("a", "1", "1Gi", gated), pod: newPod("a", "1", "1Gi"), want: "trigger"},
		{name: "a pod marked unschedulable", old: newPod("a", "1", "1Gi"), pod: newPod("a", "1", "1Gi", unschedulable), want: "soon"},
		{name: "a pod nominated", old: newPod("a", "1", "1Gi", unschedulable), pod: newPod("a", "1", "1Gi", unschedulable, nominated), known: true, want: "nudge"},
		{name: "a pod handed over by the scheduler", pod: newPod("a", "1", "1Gi"), enqueue: true, want: "soon"},
		{name: "a pod handed over again", pod: newPod("a", "1", "1Gi"), enqueue: true, known: true, want: "nudge"},
		{name: "a gated pod created", pod: newPod("a", "1", "1Gi", gated), want: ""},
		{name: "a pod bound", old: newPod("a", "1", "1Gi"), pod: newPod("a", "1", "1Gi", bound), want: ""},
		{name: "another scheduler's pod created", pod: newPod("a", "1", "1Gi", otherScheduler), want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Options{SchedulerName: "tailor", Clock: clocktesting.NewFakeClock(time.Unix(0, 0)), BatchIdle: time.Millisecond, BatchMax: time.Second})
			p.batcher = &askedBatcher{}
			if tc.known {
				p.Enqueue(tc.pod)
			}
			asked := &askedBatcher{}
			p.batcher = asked
			if tc.enqueue {
				p.Enqueue(tc.pod)
			} else {
				p.PodChanged(tc.old, tc.pod)
			}
			got := asked.first
			if got != tc.want {
				t.Fatalf("the batcher got %q, want %q", got, tc.want)
			}
		})
	}
}

// askedBatcher stands in for batch.Batcher and records which of Trigger, Nudge and Soon it was asked
// for first; every event asks for one at most.
type askedBatcher struct{ first string }

func (b *askedBatcher) Trigger() { b.ask("trigger") }
func (b *askedBatcher) Nudge()   { b.ask("nudge") }
func (b *askedBatcher) Soon()    { b.ask("soon") }

func (b *askedBatcher) ask(what string) {
	if b.first == "" {
		b.first = what
	}
}

func (b *askedBatcher) Wait(context.Context) bool { return false }
