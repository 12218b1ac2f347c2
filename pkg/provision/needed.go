package provision

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NeedWindow is how long after a pending pod was last known to need capacity (handed over by
// PostFilter, or refused by the scheduler) the provisioner keeps planning every pending pod as it
// appears, tried by the scheduler or not. A burst's later pods would otherwise wait for the
// scheduler's queue to reach them and refuse one before their capacity is planned: on the
// 1,000-pod burst, that put the last NodeClaim up to 2.7 s after the last pod (issue 15 item 5).
// Pods that fit the nodes there are, with no pod needing capacity for this long, stay the
// scheduler's alone (issue 15 item 3).
const NeedWindow = 30 * time.Second

// capacityNeeded reports whether a plan is called for: found says a pending pod is known to need
// capacity now, and otherwise one was within NeedWindow.
func (p *Provisioner) capacityNeeded(found bool) bool {
	now := p.opts.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if found {
		p.neededAt = now
		return true
	}
	return !p.neededAt.IsZero() && now.Sub(p.neededAt) < NeedWindow
}

// refusedByScheduler says whether a scheduler, this one or a leader before it, found no node for
// the pod: its PodScheduled condition is False.
func refusedByScheduler(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			// SchedulingGated stays after the gates go, until the scheduler tries the pod: it
			// says nothing of capacity.
			return c.Status == corev1.ConditionFalse && c.Reason != corev1.PodReasonSchedulingGated
		}
	}
	return false
}
