package repair

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// MaxUnhealthy is the share of nodes that may be unhealthy at once for repair to go on, as in
// Karpenter. Beyond it the cause is more likely outside the nodes (a network partition, the
// control plane, a bad image rolled out everywhere), and replacing them would only add churn to
// an outage. It rounds up, so a pool of one to five nodes may always repair one.
const MaxUnhealthy = "20%"

// Finding is the condition that makes a node due for repair, and from when.
type Finding struct {
	Condition corev1.NodeCondition
	Policy    cloud.RepairPolicy
	// Due is when the condition has lasted the policy's toleration.
	Due time.Time
}

// Unhealthy returns the node's condition that a policy names and that comes due first, or false
// when every condition a policy names is healthy.
func Unhealthy(node *corev1.Node, policies []cloud.RepairPolicy) (Finding, bool) {
	var best Finding
	found := false
	for _, p := range policies {
		for _, c := range node.Status.Conditions {
			if c.Type != p.ConditionType || c.Status != p.ConditionStatus {
				continue
			}
			due := c.LastTransitionTime.Add(p.Toleration)
			if !found || due.Before(best.Due) {
				best, found = Finding{Condition: c, Policy: p, Due: due}, true
			}
		}
	}
	return best, found
}

// isUnhealthy is whether any condition a policy names is in its unhealthy status, however long:
// the guards count nodes that are failing, not only those already due.
func isUnhealthy(node *corev1.Node, policies []cloud.RepairPolicy) bool {
	_, found := Unhealthy(node, policies)
	return found
}

// Blocked says why repairing a node of nodePool must wait, or "" when it may go ahead. Two guards,
// each allowing MaxUnhealthy of its nodes (rounded up) to be unhealthy: the NodePool's nodes, so
// that a pool whose nodes fail together (a bad image, a bad user data) is not churned through;
// and the whole cluster, so that nothing is repaired when the nodes' trouble is everyone's. A
// NodeClaim without a NodePool is checked against the cluster only.
func Blocked(nodes []*corev1.Node, nodePool string, policies []cloud.RepairPolicy) string {
	var all, bad, poolAll, poolBad int
	for _, n := range nodes {
		unhealthy := isUnhealthy(n, policies)
		all++
		if unhealthy {
			bad++
		}
		if nodePool != "" && n.Labels[karpv1.NodePoolLabelKey] == nodePool {
			poolAll++
			if unhealthy {
				poolBad++
			}
		}
	}
	if nodePool != "" && poolBad > allowed(poolAll) {
		return fmt.Sprintf("%d of NodePool %s's %d nodes are unhealthy, more than %s", poolBad, nodePool, poolAll, MaxUnhealthy)
	}
	if bad > allowed(all) {
		return fmt.Sprintf("%d of the cluster's %d nodes are unhealthy, more than %s", bad, all, MaxUnhealthy)
	}
	return ""
}

// allowed is how many of total nodes may be unhealthy.
func allowed(total int) int {
	share := intstr.FromString(MaxUnhealthy)
	n, err := intstr.GetScaledValueFromIntOrPercent(&share, total, true)
	if err != nil {
		panic(err) // MaxUnhealthy is a constant percentage
	}
	return n
}
