package provision

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailor-sh/tailor/pkg/plugins/tailor"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// keptFresh is how long KeptRoom reuses the room it last found kept on each node. Every
// scheduling cycle asks; a burst's thousand pods on their way would make each ask walk them all.
// A pod that binds in the meantime is on the node the scheduler hands Filter, which does not count
// it twice; a pod planned in the meantime has its room kept a moment later.
const keptFresh = 100 * time.Millisecond

// keptPod is what a pending pod a plan has placed takes on a node, for KeptRoom.
type keptPod struct {
	priority int32
	room     scheduling.Kept
}

// keptIndex is the room kept on each node as KeptRoom last found it, and when.
type keptIndex struct {
	at     time.Time
	byNode map[string][]scheduling.Kept
	// lowest is, by node, the lowest priority of the pods kept there: a pod of that priority or
	// lower is kept from all of them, and their list is handed over as it is.
	lowest   map[string]int32
	priority map[types.UID]int32
}

// noteKept records what each unbound pod of a plan would take on a node. Call it with p.mu held.
func (p *Provisioner) noteKept(pods []*corev1.Pod) {
	for _, pod := range pods {
		if _, ok := p.keptBy[pod.UID]; ok || pod.Spec.NodeName != "" {
			continue
		}
		r := scheduling.PodRequests(pod)
		p.keptBy[pod.UID] = keptPod{priority: corev1helpers.PodPriority(pod),
			room: scheduling.Kept{UID: pod.UID, MilliCPU: r.Cpu().MilliValue(), Memory: r.Memory().Value(), Pod: pod, Excludes: tailor.ExcluderOf(pod)}}
	}
}

// KeptRoom returns, by node, the room kept there for the pending pods a plan put on it (keptOn),
// of pod's priority or higher: the nominations a plan makes, before they are written, and the
// places it found on existing nodes. It returns nil when there is none, the common case. The node pod is on its way to
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
	if len(p.keptBy) == 0 {
		return nil
	}
	now := p.opts.Clock.Now()
	if p.kept == nil || now.Sub(p.kept.at) > keptFresh || now.Before(p.kept.at) {
		p.kept = p.indexKept(now)
	}
	own := p.keptOn(pod.UID, now)
	var out map[string][]scheduling.Kept
	for node, kept := range p.kept.byNode {
		if node == own {
			continue
		}
		if p.kept.lowest[node] < priority {
			var higher []scheduling.Kept
			for _, k := range kept {
				if p.kept.priority[k.UID] >= priority {
					higher = append(higher, k)
				}
			}
			kept = higher
		}
		if len(kept) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]scheduling.Kept{}
		}
		out[node] = kept
	}
	return out
}

// keptOn returns the node room is kept on for the pod uid: the node of the claim it is planned
// onto, once named; else the node that came up for it, within its window; else the existing node
// the last plan that placed it put it on, for NominationWindow from then. Call it with p.mu held.
func (p *Provisioner) keptOn(uid types.UID, now time.Time) string {
	if claimName, ok := p.planned[uid]; ok {
		if claim, ok := p.liveClaim(claimName); ok {
			return claim.Status.NodeName
		}
		return ""
	}
	if d, ok := p.destined[uid]; ok {
		if now.After(d.until) {
			return ""
		}
		return d.node
	}
	if h, ok := p.headed[uid]; ok && now.Sub(h.since) <= NominationWindow {
		return h.node
	}
	return ""
}

// indexKept finds the room kept on each node for the pods of the plans (keptOn). The pods a plan
// left to existing nodes are among them: in a burst those nodes are the ones just launched, and
// when the scheduler's scoring spread them over the room kept for each other, the last of them
// found none and had a node launched for it alone, up to 1.9 s after the burst's last pod. Call it
// with p.mu held.
func (p *Provisioner) indexKept(now time.Time) *keptIndex {
	idx := &keptIndex{at: now, byNode: map[string][]scheduling.Kept{}, lowest: map[string]int32{}, priority: map[types.UID]int32{}}
	for uid, k := range p.keptBy {
		node := p.keptOn(uid, now)
		if node == "" {
			continue
		}
		if low, seen := idx.lowest[node]; !seen || k.priority < low {
			idx.lowest[node] = k.priority
		}
		idx.byNode[node] = append(idx.byNode[node], k.room)
		idx.priority[uid] = k.priority
	}
	return idx
}
