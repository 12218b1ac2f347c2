package provision

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// Ledger is the part of the scheduler's view that the informers do not show yet.
type Ledger struct {
	// Planned maps pods to the NodeClaim in flight a plan put them on.
	Planned map[types.UID]string
	// Assumed maps pods the scheduler has reserved onto a node, not yet bound, to that node.
	Assumed map[types.UID]string
	// Awaited are NodeClaims that planned pods are still on their way to (see NominationWindow),
	// and AwaitedNodes existing nodes that a plan left pending pods to.
	Awaited      map[string]bool
	AwaitedNodes map[string]bool
}

// Ledger returns a copy of the provisioner's ledger.
func (p *Provisioner) Ledger() Ledger {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Clock.Now()
	awaited := map[string]bool{}
	for claim, until := range p.awaited {
		if !now.After(until) {
			awaited[claim] = true
		}
	}
	nodes := map[string]bool{}
	for node, until := range p.awaitedNodes {
		if !now.After(until) {
			nodes[node] = true
		}
	}
	// A claim with pods still planned onto it is awaited whatever the window says, and so is a
	// node a pending pod is headed for until the pod binds or is found stranded (see
	// checkStranded): removing it would only send the pod after new capacity.
	for _, claim := range p.planned {
		awaited[claim] = true
	}
	for _, h := range p.headed {
		nodes[h.node] = true
	}
	return Ledger{Planned: maps.Clone(p.planned), Assumed: maps.Clone(p.assumed), Awaited: awaited, AwaitedNodes: nodes}
}

// planOnto records that a plan put pod on claim: in planned, numbered (wrote), with the pod's key
// for activatePending. Every write of a plan goes through it; call it with p.mu held.
func (p *Provisioner) planOnto(pod *corev1.Pod, claim string) {
	p.planned[pod.UID] = claim
	p.keyOf(pod)
	p.wrote(pod.UID)
}

// wrote numbers a write to planned or assumed; call it with p.mu held.
func (p *Provisioner) wrote(uid types.UID) {
	p.seq++
	p.written[uid] = p.seq
}

// listed returns the number of the last write before a listing of the informers.
func (p *Provisioner) listed() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

// forgetStale drops what memory no longer needs to hold: plans whose NodeClaim is gone or
// initialized (the scheduler sees that node itself now), and assumptions and hand-overs of pods
// that are bound or gone. It returns the cluster to plan from and the pods handed over.
func (p *Provisioner) forgetStale(nodes []*corev1.Node, pods []*corev1.Pod, claims []*karpv1.NodeClaim, listed uint64) (*planner.Cluster, map[types.UID]bool) {
	inFlight := map[string]bool{}
	claimNode := map[string]string{}
	for _, c := range claims {
		if c.DeletionTimestamp == nil && !c.IsTrue(karpv1.ConditionTypeInitialized) {
			inFlight[c.Name] = true
		}
		claimNode[c.Name] = c.Status.NodeName
	}
	unbound := map[types.UID]bool{}
	boundTo := map[types.UID]string{}
	for _, pod := range pods {
		if pod.Spec.NodeName == "" {
			unbound[pod.UID] = true
		}
		boundTo[pod.UID] = pod.Spec.NodeName
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Clock.Now()
	// An entry written after the listing may name a pod or claim the listing does not show yet.
	stale := func(uid types.UID) bool { return p.written[uid] <= listed }
	for uid, claim := range p.planned {
		node, exists := boundTo[uid]
		if (inFlight[claim] && exists) || !stale(uid) {
			continue
		}
		if exists && node != claimNode[claim] {
			// Initialized, and the pod is still on its way to it (unbound, or still on the node
			// it is replacing): the claim's node is awaited, not empty.
			p.awaited[claim] = now.Add(NominationWindow)
			if node == "" && claimNode[claim] != "" {
				p.destined[uid] = destination{node: claimNode[claim], until: now.Add(NominationWindow)}
			}
			if h, ok := p.headed[uid]; ok && h.node == claimNode[claim] {
				// Cycles that failed while the node was still starting (registered and Ready,
				// before its startup taints were gone) are no refusal of the node it became.
				h.refused = time.Time{}
				p.headed[uid] = h
			}
		}
		delete(p.planned, uid)
		delete(p.written, uid)
	}
	expired := func(_ string, until time.Time) bool { return now.After(until) }
	maps.DeleteFunc(p.awaited, expired)
	maps.DeleteFunc(p.awaitedNodes, expired)
	for uid := range p.assumed {
		_, exists := boundTo[uid]
		if (exists && !unbound[uid]) || (!exists && stale(uid)) {
			delete(p.assumed, uid)
			delete(p.written, uid)
		}
	}
	maps.DeleteFunc(p.destined, func(uid types.UID, d destination) bool { return !unbound[uid] || now.After(d.until) })
	forgetBound(p.enqueued, unbound)
	for uid := range p.needing {
		// Only a pod the listing shows bound: one refused after the listing was taken is missing
		// from it, and no later event would say again that it needs capacity.
		if node, listed := boundTo[uid]; listed && node != "" {
			delete(p.needing, uid)
		}
	}
	forgetBound(p.keptBy, unbound)
	forgetBound(p.nominations, unbound)
	forgetBound(p.headed, unbound)
	forgetBound(p.admitted, unbound)
	forgetBound(p.reserved, unbound)
	for uid := range p.podKeys {
		_, planned := p.planned[uid]
		if _, headed := p.headed[uid]; !planned && !headed {
			delete(p.podKeys, uid)
		}
	}
	return &planner.Cluster{Nodes: nodes, Pods: pods, Claims: claims, Planned: maps.Clone(p.planned), Assumed: maps.Clone(p.assumed), Toward: p.towardNodes()},
		maps.Clone(p.enqueued)
}

// forgetBound drops the entries of pods that are bound or gone.
func forgetBound[V any](m map[types.UID]V, unbound map[types.UID]bool) {
	maps.DeleteFunc(m, func(uid types.UID, _ V) bool { return !unbound[uid] })
}

// createdClaim is a NodeClaim this process created, with when, and when the informer was first
// found past its creation without showing it (zero while it is not).
type createdClaim struct {
	claim  *karpv1.NodeClaim
	at     time.Time
	passed time.Time
}

// ClaimGone forgets a NodeClaim this process created once the informer saw it deleted: a claim
// whose launch failed at once may be gone before any plan listed it, and must not be counted as
// capacity in flight for its pods any longer.
func (p *Provisioner) ClaimGone(name string) {
	p.mu.Lock()
	delete(p.created, name)
	p.mu.Unlock()
}

// createdTTL is how long a created NodeClaim that the informer never showed is counted when the
// informer's resource version cannot tell whether it has seen the create yet (see gone).
const createdTTL = 30 * time.Second

// createdGrace is how long the informer must have been past a create it does not show before the
// claim counts as gone: the reflector's version moves when it queues an event, before the cache
// has taken it, and on a loaded process the cache may follow seconds later. A claim deleted
// without the informer seeing it (lost in a relist) costs nothing counted a few seconds longer.
const createdGrace = 5 * time.Second

// createdMax is how long a created claim is counted at most: an informer that has not shown a
// create for this long is not catching up, and the claim's pods are better planned again than
// held for ever.
const createdMax = 5 * time.Minute

// gone says whether a created claim the informer does not show is gone: the informer has seen
// past its creation (seenUpTo, its last resource version) for createdGrace, so the claim was
// deleted before it was listed. An informer behind the create will show it: on a loaded API
// server a watch ran 30 s and more behind, and a fixed wait then forgot 400 claims in flight of
// a 4,000-pod scale-up and launched them all again. Without versions to compare (an informer that
// has not synced, an API server whose versions are not integers), createdTTL after its creation;
// in any case, createdMax.
func (c *createdClaim) gone(seenUpTo string, now time.Time) bool {
	if now.Sub(c.at) > createdMax {
		klog.InfoS("Forgetting a NodeClaim this process created that the informer has not shown", "nodeClaim", c.claim.Name,
			"created", now.Sub(c.at).Round(time.Second), "informerVersion", seenUpTo, "claimVersion", c.claim.ResourceVersion)
		return true
	}
	order, err := resourceversion.CompareResourceVersion(seenUpTo, c.claim.ResourceVersion)
	switch {
	case err != nil:
		return now.Sub(c.at) > createdTTL
	case order < 0:
		c.passed = time.Time{}
		return false
	case c.passed.IsZero():
		c.passed = now
	}
	return now.Sub(c.passed) >= createdGrace
}

// withCreated returns listed and the claims this process created that it does not hold yet, and
// forgets those it holds or that are gone.
func (p *Provisioner) withCreated(listed []*karpv1.NodeClaim) []*karpv1.NodeClaim {
	seen := make(map[string]bool, len(listed))
	for _, c := range listed {
		seen[c.Name] = true
	}
	seenUpTo := ""
	if p.opts.ClaimsSeenUpTo != nil {
		seenUpTo = p.opts.ClaimsSeenUpTo()
	}
	out := listed[:len(listed):len(listed)]
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Clock.Now()
	for name, c := range p.created {
		if seen[name] || c.gone(seenUpTo, now) {
			delete(p.created, name)
			continue
		}
		p.created[name] = c
		out = append(out, c.claim)
	}
	return out
}

// destination is the node a planned pod is on its way to, and until when that holds.
type destination struct {
	node  string
	until time.Time
}
