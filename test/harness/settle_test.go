package harness

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/workload"
)

// A Job's succeeded pod goes with its node when consolidation removes the node, and the Job,
// complete, makes no other: the scenario's pod count still holds it. A pod simply missing does not.
func TestUnsettledCountsSucceededJobPodsThatLeft(t *testing.T) {
	owned := func(name string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: workload.Namespace,
			OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "batch-0"}}}, Status: corev1.PodStatus{Phase: phase}}
	}
	job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch-0", Namespace: workload.Namespace}, Status: batchv1.JobStatus{Succeeded: 2}}
	r := &Reading{State: &sandbox.State{Pods: []corev1.Pod{owned("batch-0-a", corev1.PodSucceeded)}}, Jobs: []batchv1.Job{job}}
	if why := unsettled(r, 2); strings.Contains(why, "workload pods") {
		t.Fatalf("one succeeded pod listed and one gone with its node: %q", why)
	}
	r.Jobs[0].Status.Succeeded = 1
	if why := unsettled(r, 2); !strings.Contains(why, "1 workload pods, want 2") {
		t.Fatalf("a pod missing that no Job accounts for: %q, want the count to be short", why)
	}
}

// A Job's replacement pod that waits while a sibling, pending all along, took the room the move
// opened is not newly pending: no more of the Job's pods wait than before. One more waiting is.
func TestNewlyPendingCountsInterchangeablePodsBySet(t *testing.T) {
	ctrl := true
	pod := func(name, job string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: workload.Namespace}}
		if job != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: job, Controller: &ctrl}}
		}
		return p
	}
	before := []*corev1.Pod{pod("s1", "batch"), pod("s2", "batch")}
	was, count := map[string]bool{}, map[string]int{}
	for _, p := range before {
		was[key(p)] = true
		count[replicaSetOf(p)]++
	}
	swapped := []*corev1.Pod{pod("s2", "batch"), pod("replacement", "batch")}
	if got := newlyPending(swapped, was, count); len(got) != 0 {
		t.Errorf("as many of the Job's pods wait as before, yet %d counted as newly pending", len(got))
	}
	more := append(swapped, pod("another", "batch"))
	if got := newlyPending(more, was, count); len(got) != 2 {
		t.Errorf("one more of the Job's pods waits: %d newly pending, want the 2 not pending before", len(got))
	}
	if got := newlyPending([]*corev1.Pod{pod("db-0", "")}, was, count); len(got) != 1 {
		t.Errorf("a pod of no ReplicaSet or Job pending after the scale-down is not counted")
	}
}
