package termination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGrantedEviction(t *testing.T) {
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	pod := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", CreationTimestamp: metav1.NewTime(created)}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	budget := func(ns string, disrupted map[string]time.Time) *policyv1.PodDisruptionBudget {
		b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
		if disrupted != nil {
			b.Status.DisruptedPods = map[string]metav1.Time{}
			for name, at := range disrupted {
				b.Status.DisruptedPods[name] = metav1.NewTime(at)
			}
		}
		return b
	}
	later := created.Add(time.Minute)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		pdbs []*policyv1.PodDisruptionBudget
		want bool
	}{
		{"no budget", pod(nil), nil, false},
		{"a budget that names no pod", pod(nil), []*policyv1.PodDisruptionBudget{budget("default", nil)}, false},
		{"a budget that names another pod", pod(nil), []*policyv1.PodDisruptionBudget{budget("default", map[string]time.Time{"web-1": later})}, false},
		{"granted and not deleted", pod(nil), []*policyv1.PodDisruptionBudget{budget("default", nil), budget("default", map[string]time.Time{"web-0": later})}, true},
		{"granted at the pod's creation second", pod(nil), []*policyv1.PodDisruptionBudget{budget("default", map[string]time.Time{"web-0": created})}, true},
		{"a budget of another namespace", pod(nil), []*policyv1.PodDisruptionBudget{budget("other", map[string]time.Time{"web-0": later})}, false},
		{"granted to an earlier pod of the same name", pod(nil), []*policyv1.PodDisruptionBudget{budget("default", map[string]time.Time{"web-0": created.Add(-time.Minute)})}, false},
		{"already being deleted", pod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: later} }),
			[]*policyv1.PodDisruptionBudget{budget("default", map[string]time.Time{"web-0": later})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := grantedEviction(tc.pod, tc.pdbs); got != tc.want {
				t.Errorf("grantedEviction = %v, want %v", got, tc.want)
			}
		})
	}
}
