package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// nodeLabel is the label that names a node's NodePool (karpenter.sh/nodepool); metrics does not
// import the API package for one string.
const nodeLabel = "karpenter.sh/nodepool"

var nodesDesc = prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "nodes"),
	"Nodes that Tailor launched, by NodePool.", []string{"nodepool"}, nil)

// nodeSource lists the nodes to count; the running operator sets it.
var nodeSource atomic.Pointer[func() []*corev1.Node]

// SetNodeSource makes the nodes gauge count the nodes list returns, read at scrape time so the
// gauge never drifts from the cluster.
func SetNodeSource(list func() []*corev1.Node) { nodeSource.Store(&list) }

type nodesCollector struct{}

func (nodesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- nodesDesc }

func (nodesCollector) Collect(ch chan<- prometheus.Metric) {
	list := nodeSource.Load()
	if list == nil {
		return
	}
	counts := map[string]int{}
	for _, n := range (*list)() {
		if pool, ok := n.Labels[nodeLabel]; ok {
			counts[pool]++
		}
	}
	for pool, n := range counts {
		ch <- prometheus.MustNewConstMetric(nodesDesc, prometheus.GaugeValue, float64(n), pool)
	}
}
