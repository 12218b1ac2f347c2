package termination

import (
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
