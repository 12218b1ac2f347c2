package disruption

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// watchTaintBeforeDeletion reports, once the node is gone, whether it was tainted
// karpenter.sh/disrupted while not yet being deleted: the interruption's own taint, not the
// termination path's.
func watchTaintBeforeDeletion(e *env.Env, node *corev1.Node) <-chan error {
	e.T.Helper()
	w, err := e.Cluster.Kube.CoreV1().Nodes().Watch(e.Ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + node.Name, ResourceVersion: node.ResourceVersion})
	if err != nil {
		e.T.Fatal(err)
	}
	out := make(chan error, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				break
			}
			if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
				if n.DeletionTimestamp != nil {
					out <- fmt.Errorf("node %s was first seen tainted %s only once it was being deleted", n.Name, karpv1.DisruptedTaintKey)
				} else {
					out <- nil
				}
				return
			}
		}
		out <- fmt.Errorf("node %s went without ever being tainted %s", node.Name, karpv1.DisruptedTaintKey)
	}()
	return out
}
