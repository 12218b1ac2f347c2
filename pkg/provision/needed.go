package provision

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NeedWindow is how long after a pending pod first needed capacity (handed over by PostFilter,
// or refused by the scheduler) the pods of its burst are planned as they appear, tried by the
// scheduler or not (see burst). A burst's later pods would otherwise wait for the scheduler's
// queue to reach them and refuse one before their capacity is planned: on the 1,000-pod burst,
// that put the last NodeClaim up to 2.7 s after the last pod (issue 15 item 5). Pods that fit the
// nodes there are stay the scheduler's alone (issue 15 item 3, issue 35 item 1).
const NeedWindow = 30 * time.Second

// needCapacity picks the pods a round plans among candidates, the pending pods of this scheduler
// in the listers' order: those known to need capacity (handed over by PostFilter, or refused by
// the scheduler), and, while a burst is open, the pods of that burst the scheduler has not tried
// yet.
func (p *Provisioner) needCapacity(candidates []*corev1.Pod, enqueued map[types.UID]bool) []*corev1.Pod {
	known := func(pod *corev1.Pod) bool { return enqueued[pod.UID] || refusedByScheduler(pod) }
	p.mu.Lock()
	for _, pod := range candidates {
		if known(pod) {
			p.noteNeed(pod)
		}
	}
	open, from := p.burst()
	p.mu.Unlock()
	var out []*corev1.Pod
	for _, pod := range candidates {
		if known(pod) || open && !pod.CreationTimestamp.Time.Before(from) {
			out = append(out, pod)
		}
	}
	return out
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
