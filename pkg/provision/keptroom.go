package provision

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// keptPod is what a pending pod a plan has placed takes on a node, for KeptRoom.
type keptPod struct {
	priority int32
	room     scheduling.Kept
}

// noteKept records what each pod of a plan would take on a node. Call it with p.mu held.
func (p *Provisioner) noteKept(pods []*corev1.Pod) {
	for _, pod := range pods {
		if _, ok := p.keptBy[pod.UID]; ok {
			continue
		}
		r := scheduling.PodRequests(pod)
		p.keptBy[pod.UID] = keptPod{priority: corev1helpers.PodPriority(pod),
			room: scheduling.Kept{UID: pod.UID, MilliCPU: r.Cpu().MilliValue(), Memory: r.Memory().Value()}}
	}
}

// KeptRoom returns, by node, the room kept there for the pending pods on their way to it (their
// PlannedNode), of pod's priority or higher: the nominations a plan makes, before they are
// written. It returns nil when there is none, the common case. The node pod is on its way to
// itself is left out: the room there is its and its fellows', and they bind in whatever order the
// scheduler takes them. Were each kept from the others' room, a node that came up a little
// smaller than the plan's template would take none of them, where the scheduler alone binds all
// but the last.
//
// The scheduler keeps the room of pods nominated to a node from pods of lower or equal priority,
// but a nomination is an API write per pod, written once the cloud has named the node, and a
// burst's writes fall seconds behind. Meanwhile a node launched for a hundred pods comes up
// empty, the emptiest node of all to the scheduler's scoring, and the pods planned elsewhere or
// not planned yet took its room: with the fake cloud's nodes up within a second, the pods it was
// launched for found it full and were planned new nodes, some of them twice and then held back
// as refused. Tailor's Filter keeps that room from the moment of the plan.
func (p *Provisioner) KeptRoom(pod *corev1.Pod) map[string][]scheduling.Kept {
	priority := corev1helpers.PodPriority(pod)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.planned) == 0 && len(p.destined) == 0 {
		return nil
	}
	now := p.opts.Clock.Now()
	nodeOf := map[string]string{} // claim -> its node's name, "" while unnamed or going away
	var out map[string][]scheduling.Kept
	own := ""
	keep := func(uid types.UID, node string) {
		if uid == pod.UID {
			own = node
			return
		}
		k, ok := p.keptBy[uid]
		if !ok || node == "" || k.priority < priority {
			return
		}
		if out == nil {
			out = map[string][]scheduling.Kept{}
		}
		out[node] = append(out[node], k.room)
	}
	for uid, claimName := range p.planned {
		node, seen := nodeOf[claimName]
		if !seen {
			if claim, ok := p.liveClaim(claimName); ok {
				node = claim.Status.NodeName
			}
			nodeOf[claimName] = node
		}
		keep(uid, node)
	}
	for uid, d := range p.destined {
		if _, planned := p.planned[uid]; !planned && !now.After(d.until) {
			keep(uid, d.node)
		}
	}
	delete(out, own)
	if len(out) == 0 {
		return nil
	}
	return out
}
