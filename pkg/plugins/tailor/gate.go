package tailor

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.PreEnqueuePlugin = (*Plugin)(nil)

// PreEnqueue keeps a pod out of the scheduler's active queue while it waits for a node launched
// for it that is not in the cluster yet (see the provisioner's HeldFor). Every attempt at such a
// pod fails: Filter refuses it every node there is. And each failed attempt costs the scheduling
// loop a synchronous status write; under a burst of a thousand pods on their way to new nodes,
// those writes held up the loop for minutes while pods whose node had come up waited behind them.
//
// The node's arrival wakes the pod (EventsToRegister's hint queues a held pod on events of its
// own node, and PreEnqueue then lets it in); so does the end of its hold, which the provisioner
// signals by activating the pod (its claim initialized, went away, or took longer than
// LaunchHold). Once its node exists, the pod is let in even if the node is not Ready yet: the
// scheduler's own plugins say why it must wait, and node events wake it, as for any pod.
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	node, held := p.capacity.HeldFor(pod)
	if !held || (node != "" && p.nodeExists(node)) {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waitsMessage)
}

// nodeExists says whether the scheduler's informer has the node; without an informer (a Plugin
// built by hand), every node counts as there and PreEnqueue holds only pods whose node has no
// name yet.
func (p *Plugin) nodeExists(name string) bool {
	if p.nodes == nil {
		return true
	}
	_, err := p.nodes.Get(name)
	return err == nil
}
