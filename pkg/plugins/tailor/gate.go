package tailor

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

var _ fwk.PreEnqueuePlugin = (*Plugin)(nil)

// PreEnqueue keeps a pod out of the scheduler's active queue while it waits for a node launched
// for it that cannot take it yet (see the provisioner's HeldFor): the node is not in the cluster,
// is not Ready, or still carries karpenter.sh/unregistered. Every attempt at such a pod fails:
// Filter refuses it every other node, and the scheduler's own plugins refuse it this one. And each
// failed attempt costs the scheduling loop a synchronous status write, then a backoff; under a
// burst of a thousand pods on their way to new nodes, those writes held up the loop for minutes
// while pods whose node had come up waited behind them.
//
// Every event of the node wakes the pod (EventsToRegister's hint queues a held pod on events of
// its own node), and PreEnqueue then decides again; so does the end of its hold, which the
// provisioner signals by activating the pod (its claim initialized, went away, or took longer
// than LaunchHold; for any other end, such as a plan forgotten, at the end of the round that
// ended it: the scheduler's periodic flush of unschedulable pods passes over gated ones). A node
// that is Ready and registered lets the pod in, startup taints or not:
// the scheduler's own plugins then say why it waits, and node events wake it, as for any pod.
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	node, held := p.capacity.Gate(pod)
	if !held || (node != "" && p.canTakePods(node)) {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waitsMessage)
}

// canTakePods says whether the scheduler's informer has the node, Ready and registered. Without
// an informer (a Plugin built by hand) every named node counts as ready, and PreEnqueue holds
// only pods whose node has no name yet.
func (p *Plugin) canTakePods(name string) bool {
	if p.nodes == nil {
		return true
	}
	n, err := p.nodes.Get(name)
	if err != nil {
		return false
	}
	return !scheduling.HasTaintKey(n, karpv1.UnregisteredTaintKey) && nodeutil.IsNodeReady(n)
}
