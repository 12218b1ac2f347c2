package provision

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-sh/tailor/pkg/scheduling"
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
		p.planOnto(pod, claim)
	}
	p.awaited[claim] = p.opts.Clock.Now().Add(NominationWindow)
}

// Reserve books the pod on the node the scheduler chose: it needs no plan any more, and its room
// is taken even before the binding shows in the informers. It refuses, and returns false, when
// the disruption loop has closed the node (see Close): the scheduler then puts the pod back in
// its queue instead of binding it to a node that is about to go.
func (p *Provisioner) Reserve(pod *corev1.Pod, node string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed[node] {
		if p.refused[node] == nil {
			p.refused[node] = map[string]*corev1.Pod{}
		}
		p.refused[node][pod.Namespace+"/"+pod.Name] = pod
		return false
	}
	if r := (reservedPlan{claim: p.planned[pod.UID], destined: p.destined[pod.UID], headed: p.headed[pod.UID]}); r != (reservedPlan{}) {
		// Only a plan is kept: a pod that had none (the scheduler's alone) leaves nothing to give
		// back, and nothing that would keep the provisioner's rounds from being quiet.
		p.reserved[pod.UID] = r
	}
	p.handOver(pod, node)
	delete(p.enqueued, pod.UID)
	delete(p.planned, pod.UID)
	delete(p.destined, pod.UID)
	delete(p.headed, pod.UID)
	if !scheduling.IsDaemonSetPod(pod) {
		// A DaemonSet pod lands on every node, so it says nothing of whether a node was needed.
		p.landed[node]++
	}
	p.assumed[pod.UID] = node
	p.wrote(pod.UID)
	return true
}

// reservedPlan is what Reserve set aside of a pod's plan, given back if the binding fails.
type reservedPlan struct {
	claim    string
	destined destination
	headed   heading
}

// Unreserve undoes Reserve: the binding failed, and the pod goes back to the scheduling queue.
func (p *Provisioner) Unreserve(pod *corev1.Pod, node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.assumed, pod.UID)
	// It did not land after all: a gang's pods are reserved, held at Permit and let go together
	// when the gang does not complete, and a node no pod stays on may still be given back.
	if !scheduling.IsDaemonSetPod(pod) && p.landed[node] > 0 {
		if p.landed[node]--; p.landed[node] == 0 {
			delete(p.landed, node)
		}
	}
	// The pod is pending again: it is still on its way to the node its plan chose, and without
	// its plan PostFilter would let the scheduler clear its nomination there.
	if r, ok := p.reserved[pod.UID]; ok {
		delete(p.reserved, pod.UID)
		if r.claim != "" {
			p.planOnto(pod, r.claim)
		}
		if r.destined.node != "" {
			p.destined[pod.UID] = r.destined
		}
		if r.headed.node != "" {
			p.headed[pod.UID] = r.headed
			p.keyOf(pod)
		}
	}
	// After the heading Reserve set aside is back: the cycle failed past Filter.
	p.cycleFailed(pod.UID)
}
