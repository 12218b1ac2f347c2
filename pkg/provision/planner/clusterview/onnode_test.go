package clusterview

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pod OnNode returns is bound to the node; the informer's pod it came from stays unbound.
func TestOnNodeLeavesThePodItCopiesUnbound(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}}
	on := OnNode(pod, "node-a")
	if on.Spec.NodeName != "node-a" || on.Labels["app"] != "web" {
		t.Errorf("OnNode gave node %q, labels %v; want node-a and the pod's labels", on.Spec.NodeName, on.Labels)
	}
	if pod.Spec.NodeName != "" {
		t.Errorf("the pod copied is now bound to %q", pod.Spec.NodeName)
	}
}
