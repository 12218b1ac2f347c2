package provision

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// LaunchHold bounds how long a pod waits for the node launched for it (see HeldFor), from the
// NodeClaim's creation. An EC2 node is usually Ready within a minute or two; one that takes
// longer is more likely broken than slow, and the pod is better off taking room elsewhere.
const LaunchHold = 5 * time.Minute

// HeldFor returns the only node pod may bind to, while it waits for the node a plan launched
// for it: the node of its NodeClaim, until the claim initializes or LaunchHold has passed.
// Before the cloud has named the node, the pod is held to none (""), so that it cannot bind, in
// the moment between its plan and its launch, to a node launched for others that comes up
// meanwhile, and leave its own node empty. The pods the nomination pass has not
// admitted there yet (see nominate) are held too: they wait for that pass, which runs in the
// background after the launch, and a node that initializes first must not take them meanwhile. None is held past
// its node's initialization, when the scheduler may refuse some of them there.
//
// Without it the scheduler binds a pending pod to the first feasible node, which is whichever
// node comes up first. A plan that opened a node in another zone because the pod prefers one
// (a ScheduleAnyway spread, a preferred anti-affinity) then sees the pod bind beside its
// siblings, and the node launched for it stays empty until consolidation removes it; a pod
// that must share a zone with its siblings (required affinity) may bind in a zone the plan did
// not choose, before them. The plan weighed every node the pod could take, ready or launching,
// and the pod waits only for capacity that is on its way for it.
func (p *Provisioner) HeldFor(pod *corev1.Pod) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heldFor(pod)
}

// heldFor is HeldFor with p.mu held.
func (p *Provisioner) heldFor(pod *corev1.Pod) (string, bool) {
	claim, ok := p.plannedClaimLocked(pod)
	if !ok || claim.IsTrue(karpv1.ConditionTypeInitialized) || p.opts.Clock.Since(claim.CreationTimestamp.Time) > LaunchHold {
		return "", false
	}
	if nominated := pod.Status.NominatedNodeName; nominated != "" && nominated != claim.Status.NodeName {
		// The scheduler's preemption nominated it elsewhere and may have evicted pods there
		// for it: holding it away from that room would waste their eviction.
		return "", false
	}
	return claim.Status.NodeName, true
}

// Released wakes the pending pods planned onto claim in the scheduler's queue once their hold on
// its node has ended because the claim is going away (Initialized does so when it initializes). The scheduler watches neither, and
// the plugin's queueing hint wakes a held pod only on an event about a node.
func (p *Provisioner) Released(claim string) {
	p.activatePending("", claim)
}

// lapsedHolds returns the claims among claims whose hold on their pods has just lapsed: created
// LaunchHold ago or more and not initialized, each once. Nothing in the cluster changes when a
// hold lapses, so no queueing hint wakes the pods it held; the stranded watch calls Released for
// these. Call it with p.mu held.
func (p *Provisioner) lapsedHolds(claims []*karpv1.NodeClaim, now time.Time) []string {
	live := make(map[string]bool, len(claims))
	var lapsed []string
	for _, c := range claims {
		live[c.Name] = true
		if c.DeletionTimestamp != nil || c.IsTrue(karpv1.ConditionTypeInitialized) || now.Sub(c.CreationTimestamp.Time) <= LaunchHold || p.holdLapsed[c.Name] {
			continue
		}
		p.holdLapsed[c.Name] = true
		lapsed = append(lapsed, c.Name)
	}
	for name := range p.holdLapsed {
		if !live[name] {
			delete(p.holdLapsed, name)
		}
	}
	return lapsed
}

// spared returns the pods a plan must not break (Input.Spared): the pending ones and those the
// view counts on a node in flight that are held to the node launched for them. A pod the
// scheduler has assumed, or one counted on the replacement of a node that is leaving, is not
// held, and will not pass Filter there again.
func (p *Provisioner) spared(pending []*corev1.Pod, view *planner.View) map[types.UID]bool {
	out := map[types.UID]bool{}
	note := func(pod *corev1.Pod) {
		if _, held := p.HeldFor(pod); held {
			out[pod.UID] = true
		}
	}
	for _, pod := range pending {
		note(pod)
	}
	for _, pod := range view.Pods {
		if view.Counted[pod.UID] {
			note(pod)
		}
	}
	return out
}
