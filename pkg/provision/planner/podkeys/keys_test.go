package podkeys

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKeysTellPodsApart checks what the two keys tell apart: SpecKey anything a plugin reads
// (namespace, labels, controller, spec, requests included), CountingKey the same but requests;
// pods that differ in their names alone share both, however their labels' map was filled, and
// CountingKey leaves the pod it keys as it was.
func TestKeysTellPodsApart(t *testing.T) {
	controller := true
	pod := func(name string, change ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web", "tier": "front"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: &controller}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
				NodeSelector: map[string]string{"a": "1", "b": "2", "c": "3"}},
		}
		for _, c := range change {
			c(p)
		}
		return p
	}
	base := pod("a")
	same := pod("b", func(p *corev1.Pod) {
		// The same labels and selector, written in another order.
		p.Labels = map[string]string{"tier": "front", "app": "web"}
		p.Spec.NodeSelector = map[string]string{"c": "3", "b": "2", "a": "1"}
	})
	if SpecKey(base) != SpecKey(same) || CountingKey(base) != CountingKey(same) {
		t.Fatal("pods that differ in their names alone have different keys")
	}
	bigger := pod("c", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	})
	if SpecKey(base) == SpecKey(bigger) {
		t.Error("pods that request different cpu share a spec key")
	}
	if CountingKey(base) != CountingKey(bigger) {
		t.Error("pods that differ in their requests alone have different counting keys")
	}
	if bigger.Spec.Containers[0].Resources.Requests.Cpu().String() != "2" {
		t.Error("CountingKey changed the pod it keyed")
	}
	for what, other := range map[string]*corev1.Pod{
		"namespace":  pod("d", func(p *corev1.Pod) { p.Namespace = "other" }),
		"labels":     pod("e", func(p *corev1.Pod) { p.Labels["tier"] = "back" }),
		"label keys": pod("f", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web", "tier=front": ""} }),
		"controller": pod("g", func(p *corev1.Pod) { p.OwnerReferences[0].UID = "rs-other" }),
		"spec":       pod("h", func(p *corev1.Pod) { p.Spec.NodeSelector["a"] = "9" }),
	} {
		if SpecKey(base) == SpecKey(other) || CountingKey(base) == CountingKey(other) {
			t.Errorf("pods that differ in their %s share a key", what)
		}
	}
}
