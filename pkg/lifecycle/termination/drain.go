package termination

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/kubernetes/pkg/apis/scheduling"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// drainGroups orders the pods a drain must remove, as Karpenter does: ordinary pods first, then
// critical ones, and DaemonSet pods last (each again ordinary before critical), so that the
// node's own services outlive the workloads that need them. Pods that need no eviction are left
// out: finished pods, mirror pods, pods already being deleted, and pods that tolerate
// karpenter.sh/disrupted (they chose to stay until the node goes).
func drainGroups(pods []*corev1.Pod) [][]*corev1.Pod {
	groups := make([][]*corev1.Pod, 4)
	for _, p := range pods {
		if !scheduling.NeedsEviction(p) {
			continue
		}
		i := 0
		if isCritical(p) {
			i = 1
		}
		if scheduling.IsDaemonSetPod(p) {
			i += 2
		}
		groups[i] = append(groups[i], p)
	}
	return slices.DeleteFunc(groups, func(g []*corev1.Pod) bool { return len(g) == 0 })
}

func isCritical(p *corev1.Pod) bool {
	if p.Spec.PriorityClassName == schedulingv1.SystemClusterCritical || p.Spec.PriorityClassName == schedulingv1.SystemNodeCritical {
		return true
	}
	return p.Spec.Priority != nil && *p.Spec.Priority >= schedulingv1.SystemCriticalPriority
}

// mustDelete reports whether the termination deadline is so close that pod must be deleted now,
// PDB or not, for its own grace period to end before the deadline; and with what grace period.
func mustDelete(p *corev1.Pod, deadline *time.Time, now time.Time) (bool, int64) {
	if deadline == nil {
		return false, 0
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	left := deadline.Sub(now)
	if left > time.Duration(grace)*time.Second {
		return false, 0
	}
	return true, max(0, int64(left/time.Second))
}

// stuckTerminatingAfter is how long past its deletionTimestamp (the moment its grace period
// ended) a pod being deleted stops holding its node, as Karpenter's IsStuckTerminating: a pod
// whose kubelet is gone, or whose deletion stopped halfway, would otherwise keep the node, and
// the instance under it, for ever. The minute lets a live kubelet finish first.
const stuckTerminatingAfter = time.Minute

// stillRunning are the pods that keep the node from being terminated at now (see holdsNode): a
// pod stuck terminating does not.
func stillRunning(pods []*corev1.Pod, now time.Time) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if holdsNode(p) && !stuckTerminating(p, now) {
			out = append(out, p)
		}
	}
	return out
}

// stuckTerminating reports whether p has been terminating for stuckTerminatingAfter past the end
// of its grace period.
func stuckTerminating(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && now.Sub(p.DeletionTimestamp.Time) > stuckTerminatingAfter
}

// holdsNode reports whether p keeps its node from being terminated: it needs eviction, or it is
// being deleted and has not finished. Tolerating pods and mirror pods do not hold the node.
func holdsNode(p *corev1.Pod) bool {
	terminating := p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	return (scheduling.NeedsEviction(p) || terminating) && !scheduling.IsMirror(p)
}
