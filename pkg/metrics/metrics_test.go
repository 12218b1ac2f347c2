package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodesGaugeCountsByNodePool(t *testing.T) {
	node := func(name, pool string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if pool != "" {
			n.Labels[nodeLabel] = pool
		}
		return n
	}
	SetNodeSource(func() []*corev1.Node {
		return []*corev1.Node{node("a", "default"), node("b", "default"), node("c", "gpu"), node("d", "")}
	})
	want := `
# HELP tailor_nodes Nodes that Tailor launched, by NodePool.
# TYPE tailor_nodes gauge
tailor_nodes{nodepool="default"} 2
tailor_nodes{nodepool="gpu"} 1
`
	if err := testutil.CollectAndCompare(nodesCollector{}, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
