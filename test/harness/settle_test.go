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
