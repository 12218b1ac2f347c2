package provision

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// A backlog of pods that fit the existing nodes is the scheduler's alone, and must cost Tailor
// nothing (issue 35 item 1). A round of the provisioner therefore starts with a test that reads
// no pod: what the informer handlers, PostFilter and Reserve already told this process. Only when
// something could need capacity does the round list every pod and node and view the cluster.

// need is what is known of a pending pod that needs capacity: since when (first handed over by
// PostFilter or seen refused by the scheduler), and when it was created.
type need struct {
	since   time.Time
	created time.Time
}

// noteNeed records that pod needs capacity, keeping the time it first did, and reports whether
// it was not known to before; call it with p.mu held.
func (p *Provisioner) noteNeed(pod *corev1.Pod) bool {
	if _, ok := p.needing[pod.UID]; ok {
		return false
	}
	p.needing[pod.UID] = need{since: p.opts.Clock.Now(), created: pod.CreationTimestamp.Time}
	return true
}

// podSeen keeps the informer's side of the quiet test current: a pending pod of this scheduler
// that the scheduler refused needs capacity; one that bound, left or stopped being provisionable
// no longer does, and a binding ends what Reserve booked for it and what the plans followed of
// it (what a full round's forgetStale would drop). Bindings lock once per pod, as Reserve does.
// It reports whether pod is newly known to need capacity.
func (p *Provisioner) podSeen(old, pod *corev1.Pod) bool {
	switch {
	case pod.Spec.SchedulerName != p.opts.SchedulerName:
	case p.IsProvisionable(pod):
		if refusedByScheduler(pod) {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.noteNeed(pod)
		}
	case old == nil:
	case old.Spec.NodeName == "" && pod.Spec.NodeName != "":
		p.forgetPod(pod.UID, true)
	case p.IsProvisionable(old):
		p.forgetPod(pod.UID, false)
	}
	return false
}

// PodGone forgets a deleted pod's need for capacity and what Reserve booked for it.
func (p *Provisioner) PodGone(pod *corev1.Pod) {
	if pod.Spec.SchedulerName == p.opts.SchedulerName {
		p.forgetPod(pod.UID, true)
	}
}

func (p *Provisioner) forgetPod(uid types.UID, settled bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.needing, uid)
	if !settled {
		return
	}
	delete(p.assumed, uid)
	delete(p.reserved, uid)
	delete(p.enqueued, uid)
	// What the plans followed of it ends too: between full rounds (see following) a scale-up's
	// bound pods would otherwise be walked by KeptRoom's index and kept rounds from being quiet.
	delete(p.headed, uid)
	delete(p.keptBy, uid)
	delete(p.destined, uid)
	delete(p.admitted, uid)
	delete(p.nominations, uid)
	if _, ok := p.planned[uid]; !ok {
		delete(p.written, uid)
	}
}

// quiet reports whether a round can skip reading the cluster: nothing asked for a full look
// (Trigger, PlanNow, the first round), no pod is handed over or known to need capacity that is
// not already on its way somewhere (needsPlanning), no claim is being created, no node is
// leaving or launching, and, while earlier plans are still followed (following), a full look was
// taken within ResyncInterval. It reads the node and NodeClaim listers (no pod), and clears the
// request for a full look it answers.
func (p *Provisioner) quiet() bool {
	why := p.fullLookWanted()
	if why == "" && !p.settled() {
		why = "a NodeClaim or node is launching or leaving"
	}
	if why == "" && p.sweep() {
		why = "a refusal the informer handlers missed"
	}
	if why != "" {
		if ctx := p.runCtx; ctx != nil {
			klog.FromContext(ctx).V(4).Info("Reading the cluster", "why", why)
		}
		return false
	}
	return true
}

// fullLookWanted says what, of the provisioner's own state, asks this round to read the cluster,
// or "" if nothing does.
func (p *Provisioner) fullLookWanted() string {
	if len(p.shortSince) > 0 {
		return "a gang waits for its pods"
	}
	now := p.opts.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	defer func() { p.forced = false }()
	switch {
	case p.forced || len(p.waiters) > 0:
		return "asked for"
	case len(p.planned)+len(p.created) > 0:
		return "a plan onto a NodeClaim is open"
	case len(p.gated) > 0:
		return "pods held at the scheduler's gate"
	case p.needsPlanning(now):
		return "a pod needs a plan"
	case p.following() && now.Sub(p.lookedAt) >= ResyncInterval:
		return "the resync of the plans followed"
	}
	return ""
}

// A pod the scheduler refused stays known to need capacity until it binds. While the plan that
// sent it somewhere holds, it needs nothing more of a round, and nor do the plans being followed
// (following), but a round used to read the cluster whenever either was there. At 20,000 pods on
// 5,000 nodes on two cores the scheduler took 20 minutes to work through its queue once every
// node was up, and each round that a status write, a sibling taking a pod's place (handOver) or
// the resync opened listed every pod and viewed the whole cluster, mostly to find nothing to
// plan: those rounds were 10-12% of the process's CPU.

// needsPlanning reports whether a pod handed over or known to need capacity may need a plan: one
// of a burst still open (its untried siblings are planned with it, see burst), or one not on its
// way anywhere (onItsWay). A pod stays handed over (enqueued) until it is reserved or binds, so
// the stranded watch's hand-overs, hundreds at a time while the scheduler's queue is long, count
// only until a round has planned them. Call it with p.mu held.
func (p *Provisioner) needsPlanning(now time.Time) bool {
	for uid := range p.enqueued {
		if !p.onItsWay(uid, now) {
			return true
		}
	}
	for uid, n := range p.needing {
		if now.Sub(n.since) < NeedWindow || !p.onItsWay(uid, now) {
			return true
		}
	}
	return false
}

// onItsWay says whether a pending pod needs no plan for now: it is on a claim in flight, reserved
// by the scheduler, headed for a node the scheduler has not refused it since (towardNodes), or held
// back by the refusal backoff. Call it with p.mu held.
func (p *Provisioner) onItsWay(uid types.UID, now time.Time) bool {
	if p.planned[uid] != "" || p.assumed[uid] != "" {
		return true
	}
	if h, ok := p.headed[uid]; ok && h.toward() {
		return true
	}
	r := p.refusals[uid]
	return r != nil && now.Before(r.until)
}

// following says whether earlier plans are still followed: pods headed for nodes, nominations
// written, room kept, pods told why they wait. A full round checks them against the cluster
// (Ungrounded plans again a pod whose node would now refuse it) and forgets what has ended; when
// nothing else asks for one, that is done once per ResyncInterval, not at every pod update.
// Call it with p.mu held.
func (p *Provisioner) following() bool {
	return len(p.headed)+len(p.nominations)+len(p.admitted)+len(p.awaited)+len(p.awaitedNodes)+
		len(p.refusals)+len(p.told)+len(p.destined)+len(p.keptBy)+len(p.reserved)+len(p.needing)+len(p.enqueued) > 0
}

// settled reports whether no NodeClaim is launching or leaving and no node is leaving, looking
// at most once per NudgeGap while that holds. A burst that fits opens a batch per pod or two (30
// ms of idle window), and listing 5,000 nodes each time was most of what Tailor allocated while
// the memory benchmark's pods bound (0.9 GB in 10 minutes). Waiting no longer than a nudge does
// costs nothing: the informer handlers ask for a full round at once when a node starts leaving
// (Replan) or a claim's node is named (Trigger), so the look only backs them up.
func (p *Provisioner) settled() bool {
	now := p.opts.Clock.Now()
	if !p.settledAt.IsZero() && now.Sub(p.settledAt) < NudgeGap {
		return true
	}
	p.settledAt = time.Time{}
	claims, err := p.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return false
	}
	for _, c := range claims {
		if c.DeletionTimestamp != nil || !c.IsTrue(karpv1.ConditionTypeInitialized) {
			return false // a node on its way or leaving: its pods may need planning
		}
	}
	nodes, err := p.opts.Nodes.List(labels.Everything())
	if err != nil {
		return false
	}
	for _, n := range nodes {
		if scheduling.IsLeaving(n, nil) {
			return false
		}
	}
	p.settledAt = now
	return true
}

// sweep looks, at most once per ResyncInterval, through the listed pods for one the scheduler
// refused that the informer handlers did not note, and notes it; it reports whether it found
// one not noted before. The handlers keep needing current; the sweep bounds what a missed event
// can cost to one resync, and reads each pod's conditions without building anything.
func (p *Provisioner) sweep() bool {
	now := p.opts.Clock.Now()
	if !p.swept.IsZero() && now.Sub(p.swept) < ResyncInterval {
		return false
	}
	p.swept = now
	pods, err := p.opts.Pods.List(labels.Everything())
	if err != nil {
		return true
	}
	found := false
	for _, pod := range pods {
		if p.IsProvisionable(pod) && refusedByScheduler(pod) {
			p.mu.Lock()
			// One already known is needsPlanning's to weigh.
			found = p.noteNeed(pod) || found
			p.mu.Unlock()
		}
	}
	return found
}

// BurstSlack is how long before the first pod of a burst that needs capacity another pod may have
// been created and still be of that burst: the scheduler's queue does not refuse a burst's pods
// in the order they were created, its controllers create them over seconds on a loaded API
// server, and creation times are kept to the second.
const BurstSlack = 10 * time.Second

// burst says whether pods the scheduler has not tried yet are planned with those known to need
// capacity, and which: while a pod first needed capacity within NeedWindow, the pods created no
// earlier than BurstSlack before the first such pod. A burst's later pods are planned before the
// scheduler's queue reaches them, in the batch of its first ones; a backlog created before the
// burst is left to the scheduler, which tries each pod before Tailor plans it. Call it with p.mu
// held.
func (p *Provisioner) burst() (open bool, from time.Time) {
	now := p.opts.Clock.Now()
	for _, n := range p.needing {
		if now.Sub(n.since) >= NeedWindow {
			continue
		}
		if !open || n.created.Before(from) {
			from = n.created
		}
		open = true
	}
	return open, from.Add(-BurstSlack)
}
