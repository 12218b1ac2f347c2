package provision

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Gate is HeldFor asked by the scheduler's PreEnqueue gate, which keeps a held pod out of the
// queue while its node cannot take it. A gated pod comes back to the queue only on an event of a
// node (the plugin's queueing hint) or an activation, and the scheduler's periodic flush of
// unschedulable pods passes over it. Most ways a hold ends are one of those: the claim
// initializes or goes away, or the hold lapses (Initialized, Released), or the scheduler
// nominates the pod elsewhere (an update of the pod, after which the scheduler asks PreEnqueue
// again). A round that forgets a plan is not: it plans the pod again, on an existing node or
// nowhere, and nothing in the cluster changes. So Gate remembers the pods it kept out, and every
// round lets in those whose hold has ended (letInUngated).
func (p *Provisioner) Gate(pod *corev1.Pod) (string, bool) {
	node, held := p.HeldFor(pod)
	if held {
		p.mu.Lock()
		p.gated[pod.UID] = true
		p.mu.Unlock()
	}
	return node, held
}

// letInUngated activates the pods of ungated(pods).
func (p *Provisioner) letInUngated(pods []*corev1.Pod) {
	if in := p.ungated(pods); len(in) > 0 && p.opts.Activate != nil {
		p.opts.Activate(in)
	}
}

// ungated returns, among pods (every pod, as the round read them), the pending ones Gate kept
// out that are held no more, keyed for Activate, and forgets them, and those that bound or went
// away.
func (p *Provisioner) ungated(pods []*corev1.Pod) map[string]*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.gated) == 0 {
		return nil
	}
	out := map[string]*corev1.Pod{}
	seen := make(map[types.UID]bool, len(p.gated))
	for _, pod := range pods {
		if !p.gated[pod.UID] {
			continue
		}
		seen[pod.UID] = true
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			delete(p.gated, pod.UID)
			continue
		}
		if _, held := p.heldFor(pod); !held {
			out[pod.Namespace+"/"+pod.Name] = pod
			delete(p.gated, pod.UID)
		}
	}
	for uid := range p.gated {
		if !seen[uid] { // no longer listed: gone
			delete(p.gated, uid)
		}
	}
	return out
}

// forgetGated forgets that Gate kept pods out, without letting them in: a gang given back
// starts afresh, and its pods come back on the events of its nodes going away, not at once onto
// the capacity being given back. Call it with p.mu held.
func (p *Provisioner) forgetGated(pods []*corev1.Pod) {
	for _, pod := range pods {
		delete(p.gated, pod.UID)
	}
}
