package provision

import corev1 "k8s.io/api/core/v1"

// Enqueue hands over a pod that fits no node. The pod arrived when it was created (PodChanged):
// the scheduler goes through a burst's pods at its own pace, and the batch does not wait for it.
func (p *Provisioner) Enqueue(pod *corev1.Pod) {
	p.mu.Lock()
	p.enqueued[pod.UID] = true
	p.mu.Unlock()
	p.batcher.Nudge()
}

// PodChanged asks for a plan when pod, one of the informer's, may need capacity; old is what the
// informer had before, nil for a pod just added. A pod that has just become provisionable
// (created, or its last scheduling gate gone) has arrived, and the open batch waits the idle
// window for more like it. Any other change to one, such as the scheduler marking it
// unschedulable or Tailor nominating it, only opens a batch when none is open.
func (p *Provisioner) PodChanged(old, pod *corev1.Pod) {
	switch {
	case !p.IsProvisionable(pod):
	case old != nil && p.IsProvisionable(old):
		p.batcher.Nudge()
	default:
		p.batcher.Trigger()
	}
}

// Trigger asks for a plan without a pod arriving, e.g. when capacity went away: it opens a batch
// when none is open.
func (p *Provisioner) Trigger() { p.batcher.Nudge() }
