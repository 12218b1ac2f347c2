package provision

import corev1 "k8s.io/api/core/v1"

// Enqueue hands over a pod that fits no node. The pod arrived when it was created (PodChanged):
// the scheduler goes through a burst's pods at its own pace, and the batch does not wait for it.
// A pod handed over for the first time is planned without the nudges' gap.
func (p *Provisioner) Enqueue(pod *corev1.Pod) {
	p.mu.Lock()
	p.enqueued[pod.UID] = true
	fresh := p.noteNeed(pod)
	p.mu.Unlock()
	if fresh {
		p.batcher.Soon()
	} else {
		p.batcher.Nudge()
	}
}

// PodChanged asks for a plan when pod, one of the informer's, may need capacity; old is what the
// informer had before, nil for a pod just added. A pod that has just become provisionable
// (created, or its last scheduling gate gone) has arrived, and the open batch waits the idle
// window for more like it. A pod the scheduler has just refused for the first time needs
// capacity, and is planned without the nudges' gap. Any other change to one, such as Tailor
// nominating it, only opens a batch when none is open, and no sooner than the gap after the last.
func (p *Provisioner) PodChanged(old, pod *corev1.Pod) {
	fresh := p.podSeen(old, pod)
	switch {
	case !p.IsProvisionable(pod):
	case fresh:
		p.batcher.Soon()
	case old != nil && p.IsProvisionable(old):
		p.batcher.Nudge()
	default:
		p.batcher.Trigger()
	}
}

// Trigger asks for a full round without a pod arriving, e.g. when a launching claim's node is
// named: it opens a batch when none is open, spaced like a nudge.
func (p *Provisioner) Trigger() {
	p.force()
	p.batcher.Nudge()
}

// Replan asks for a full round at once, without the nudges' gap: capacity went away (a launch
// failed, a node started leaving) or a pod lost its place in a plan, so pods need capacity now.
func (p *Provisioner) Replan() {
	p.force()
	p.batcher.Soon()
}

func (p *Provisioner) force() {
	p.mu.Lock()
	p.forced = true
	p.mu.Unlock()
}
