package metrics

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pod's startup is observed once, when it first turns Ready: in the update that starts it, or
// in a later one when a readiness probe holds it back; a readiness flap afterwards is not a
// startup, nor is a pod never seen pending.
func TestPodStartupIsObservedAtTheFirstReady(t *testing.T) {
	created := time.Now().Add(-time.Minute)
	pod := func(uid string, phase corev1.PodPhase, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)},
			Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready,
				LastTransitionTime: metav1.NewTime(created.Add(30 * time.Second))}}}}
	}
	count := func() uint64 {
		m := &dto.Metric{}
		if err := kPodStartup.Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetSummary().GetSampleCount()
	}
	before := count()
	PodChanged(pod("probed", corev1.PodPending, corev1.ConditionFalse), pod("probed", corev1.PodRunning, corev1.ConditionFalse))
	PodChanged(pod("probed", corev1.PodRunning, corev1.ConditionFalse), pod("probed", corev1.PodRunning, corev1.ConditionTrue))
	PodChanged(pod("probed", corev1.PodRunning, corev1.ConditionFalse), pod("probed", corev1.PodRunning, corev1.ConditionTrue))
	PodChanged(pod("at-once", corev1.PodPending, corev1.ConditionFalse), pod("at-once", corev1.PodRunning, corev1.ConditionTrue))
	PodChanged(pod("never-pending", corev1.PodRunning, corev1.ConditionFalse), pod("never-pending", corev1.PodRunning, corev1.ConditionTrue))
	if got := count() - before; got != 2 {
		t.Errorf("%d startups observed, want 2 (the probed pod once, the pod ready at once)", got)
	}
}
