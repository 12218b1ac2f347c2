package simulation

import (
	fwk "k8s.io/kube-scheduler/framework"
)

// AllowedByPreFilter reports whether the nodes a PreFilter result names (pre, nil when PreFilter
// named none) include node. The scheduler asks Filter only about those nodes, so a caller that
// asks Filter itself must skip the others to answer as the scheduler would.
func AllowedByPreFilter(pre *fwk.PreFilterResult, node string) bool {
	return pre == nil || pre.AllNodes() || pre.NodeNames.Has(node)
}
