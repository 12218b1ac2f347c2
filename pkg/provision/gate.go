package provision

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Close stops Reserve from booking pods onto nodes, and returns the pods the scheduler had
// already reserved onto them and not yet bound. Under one lock: every Reserve on those nodes
// either happened before Close, and its pod is in the result (or, once bound, in the informers),
// or happens after, and is refused. So a caller that decides from the result and the informers
// has seen every pod that will ever run there, which is what lets the disruption loop remove a
// node without stranding a pod the scheduler placed in the same instant.
func (p *Provisioner) Close(nodes []string) map[types.UID]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[types.UID]string{}
	for _, n := range nodes {
		p.closed[n] = true
	}
	for uid, node := range p.assumed {
		if p.closed[node] {
			out[uid] = node
		}
	}
	return out
}

// Reopen undoes Close, e.g. when a disruption is abandoned or the node is gone, and sends the pods
// Reserve refused meanwhile back to the scheduler's active queue: nothing else may happen in the
// cluster that would requeue them before the scheduler's periodic flush, minutes later.
func (p *Provisioner) Reopen(nodes []string) {
	p.mu.Lock()
	activate := map[string]*corev1.Pod{}
	for _, n := range nodes {
		delete(p.closed, n)
		for key, pod := range p.refused[n] {
			activate[key] = pod
		}
		delete(p.refused, n)
	}
	p.mu.Unlock()
	if len(activate) > 0 && p.opts.Activate != nil {
		p.opts.Activate(activate)
	}
}

// Closed returns the nodes Close closed and nothing reopened.
func (p *Provisioner) Closed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.closed))
	for n := range p.closed {
		out = append(out, n)
	}
	return out
}

// Adopt records that a NodeClaim someone else created (the disruption loop's replacement) is
// meant for pods, exactly as if a plan had put them there: once their node is tainted, the
// provisioner counts them on that claim instead of planning capacity for them a second time.
func (p *Provisioner) Adopt(claim string, pods []*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pod := range pods {
		p.planned[pod.UID] = claim
		p.wrote(pod.UID)
	}
	p.awaited[claim] = p.opts.Clock.Now().Add(NominationWindow)
}
