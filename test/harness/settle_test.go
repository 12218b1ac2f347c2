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

// Whatever method removed its node, a pod that ran before a disruption and waits after it is
// found, with the eviction and the node's disruption that the Events tell; a pod that never ran
// is not the disruption's doing.
func TestRanThenPendingFindsEvictedPodsThatWait(t *testing.T) {
	ctrl := true
	pod := func(name, node string, phase corev1.PodPhase, rs string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: workload.Namespace},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if rs != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs, Controller: &ctrl}}
		}
		return p
	}
	before := &Reading{State: &sandbox.State{Pods: []corev1.Pod{
		pod("db-0", "node-a", corev1.PodRunning, ""), pod("db-1", "", corev1.PodPending, ""),
		pod("web-x", "node-a", corev1.PodRunning, "web"), pod("api-x", "", corev1.PodPending, "api"),
	}}}
	after := &Reading{State: &sandbox.State{Pods: []corev1.Pod{
		pod("db-0", "", corev1.PodPending, ""), pod("db-1", "", corev1.PodPending, ""),
		pod("web-y", "", corev1.PodPending, "web"), pod("api-x", "", corev1.PodPending, "api"), pod("api-y", "", corev1.PodPending, "api"),
	}}}
	d := &Disruptions{Pods: map[string]string{workload.Namespace + "/db-0": "Evicted from node node-a, which is being terminated"},
		Nodes: map[string]string{"node-a": "Expired: NodeClaim node-a expired"}}
	got := map[string]string{}
	for _, f := range RanThenPending(before, after, d) {
		if f.Check != "ran-then-pending" {
			t.Errorf("finding %s: check %q", f, f.Check)
		}
		got[f.Object] = f.Detail
	}
	if len(got) != 2 || got[workload.Namespace+"/db-0"] == "" || got[workload.Namespace+"/web-y"] == "" {
		t.Fatalf("found %v; want db-0 (ran, now pending) and web-y (one more of web waits, web ran), not db-1 or api-y (never ran)", got)
	}
	if detail := got[workload.Namespace+"/db-0"]; !strings.Contains(detail, "Evicted from node node-a") || !strings.Contains(detail, "Expired") {
		t.Errorf("db-0's finding %q does not say how it left", detail)
	}
}
