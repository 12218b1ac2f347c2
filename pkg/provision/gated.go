package provision

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Gate is HeldFor for the scheduler's PreEnqueue gate, which keeps a held pod out of the queue
// while its node cannot take it. It remembers the pods it was asked about while held: a gated pod
// comes back to the queue only on an event of a node or an activation, and not every way a hold
// ends is one of those (a plan given back, a nomination written elsewhere). The stranded watch
// activates the remembered pods whose hold has ended (ungated), so none waits on a gate that no
// longer applies for more than one of its rounds.
func (p *Provisioner) Gate(pod *corev1.Pod) (string, bool) {
	node, held := p.HeldFor(pod)
	if held {
		p.mu.Lock()
		p.gated[pod.UID] = true
		p.mu.Unlock()
	}
	return node, held
}

// ungated returns, among pods (all of this scheduler's, as the lister has them), the pending ones
// Gate remembered that are held no more, keyed for Activate, and forgets them, and the remembered
// pods that bound or went away.
func (p *Provisioner) ungated(pods []*corev1.Pod) map[string]*corev1.Pod {
	p.mu.Lock()
	if len(p.gated) == 0 {
		p.mu.Unlock()
		return nil
	}
	remembered := make(map[types.UID]bool, len(p.gated))
	for uid := range p.gated {
		remembered[uid] = true
	}
	p.mu.Unlock()
	out := map[string]*corev1.Pod{}
	var forget []types.UID
	for _, pod := range pods {
		if !remembered[pod.UID] {
			continue
		}
		delete(remembered, pod.UID)
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			forget = append(forget, pod.UID)
			continue
		}
		// HeldFor takes p.mu itself.
		if _, held := p.HeldFor(pod); !held {
			out[pod.Namespace+"/"+pod.Name] = pod
			forget = append(forget, pod.UID)
		}
	}
	for uid := range remembered { // no longer in the lister: gone
		forget = append(forget, uid)
	}
	p.mu.Lock()
	for _, uid := range forget {
		delete(p.gated, uid)
	}
	p.mu.Unlock()
	return out
}
