package termination

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// TestLeftDrain: the pod updates that wake a node's drain are those that move it along; the
// others (a status heartbeat, a label) leave the node to its own events.
func TestLeftDrain(t *testing.T) {
	deleting := &metav1.Time{Time: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	pod := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	running := pod(nil)
	evicted := pod(func(p *corev1.Pod) { p.DeletionTimestamp = deleting })
	for _, tc := range []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"its eviction was accepted", running, evicted, true},
		{"it finished while running", running, pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), true},
		{"it failed while being deleted", evicted, pod(func(p *corev1.Pod) { p.DeletionTimestamp = deleting; p.Status.Phase = corev1.PodFailed }), true},
		{"still running, a label changed", running, pod(func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), false},
		{"still being deleted", evicted, pod(func(p *corev1.Pod) { p.DeletionTimestamp = deleting; p.Status.Message = "stopping" }), false},
		{"it tolerates the disrupted taint, and changed", pod(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
		}), pod(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
			p.Status.Phase = corev1.PodSucceeded
		}), false},
		{"a mirror pod finished", pod(func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
			pod(func(p *corev1.Pod) {
				p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
				p.Status.Phase = corev1.PodSucceeded
			}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := leftDrain(tc.old, tc.new); got != tc.want {
				t.Errorf("leftDrain = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStillRunning: a pod being deleted holds its node until a minute past the end of its grace
// period (its deletionTimestamp), as Karpenter's IsStuckTerminating; a running pod always does.
func TestStillRunning(t *testing.T) {
	now := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	pod := func(name string, deletedAgo time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if deletedAgo >= 0 {
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-deletedAgo)}
		}
		return p
	}
	pods := []*corev1.Pod{
		pod("running", -1),
		pod("grace-not-over", -10*time.Second), // deletionTimestamp is when its grace period ends
		pod("just-deleted", 0),
		pod("a-minute-past", time.Minute),
		pod("stuck", time.Minute+time.Second),
	}
	var got []string
	for _, p := range stillRunning(pods, now) {
		got = append(got, p.Name)
	}
	want := []string{"running", "grace-not-over", "just-deleted", "a-minute-past"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("holding the node: %v, want %v", got, want)
	}
}
