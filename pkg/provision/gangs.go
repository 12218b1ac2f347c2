package provision

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// maxGangReplans bounds the plans of one round that leave out gangs competing for the same
// capacity, one at a time: a plan without a gang's pods packs the others anew.
const maxGangReplans = 3

// gangOf is the planner.GangOf of the PodGroups the scheduler sees; nil when gang scheduling is
// off (no PodGroup lister), so that no pod is held back by a policy the scheduler does not apply.
func (p *Provisioner) gangOf() planner.GangOf {
	if p.opts.PodGroups == nil {
		return nil
	}
	return func(pod *corev1.Pod) (planner.Gang, bool) {
		name, ok := scheduling.PodGroupOf(pod)
		if !ok {
			return planner.Gang{}, false
		}
		pg, err := p.opts.PodGroups.PodGroups(pod.Namespace).Get(name)
		if err != nil || pg.Spec.SchedulingPolicy.Gang == nil {
			return planner.Gang{}, false
		}
		return planner.Gang{Namespace: pod.Namespace, Name: pg.Name, MinCount: int(pg.Spec.SchedulingPolicy.Gang.MinCount)}, true
	}
}

// wholeGangs plans the input so that every gang in it is planned whole (at least MinCount of its
// pods placed), in one topology domain if it asks for one, or not at all. A gang that cannot be completed even alone is left out first: no
// plan will complete it now. Gangs that each fit alone but not together are left out youngest
// first, so that the oldest keeps its capacity. The pods of the gangs left out are unplaceable,
// with why, and their PodGroups get an Event.
func (p *Provisioner) wholeGangs(ctx context.Context, pl *planner.Planner, in planner.Input) *planner.Plan {
	in = p.oneDomainGangs(ctx, pl, in)
	plan := pl.Plan(ctx, in)
	gangOf := p.gangOf()
	short := planner.ShortGangs(in, plan, gangOf)
	if len(short) == 0 {
		return plan
	}
	var dropped []planner.ShortGang
	for _, s := range short {
		alone := in
		alone.Pending = s.Pods
		if again := planner.ShortGangs(alone, pl.Plan(ctx, alone), gangOf); len(again) > 0 {
			dropped = append(dropped, again[0])
		}
	}
	in.Pending = without(in.Pending, dropped)
	for round := 0; ; round++ {
		plan = pl.Plan(ctx, in)
		short = planner.ShortGangs(in, plan, gangOf)
		if len(short) == 0 {
			break
		}
		if round == maxGangReplans {
			// Still short after as many tries: none of these gangs gets capacity this round.
			dropped = append(dropped, short...)
			in.Pending = without(in.Pending, short)
			plan = pl.Plan(ctx, in)
			break
		}
		youngest := short[0]
		for _, s := range short[1:] {
			if youngestPod(s.Pods).After(youngestPod(youngest.Pods)) {
				youngest = s
			}
		}
		dropped = append(dropped, youngest)
		in.Pending = without(in.Pending, []planner.ShortGang{youngest})
	}
	p.tellShortGangs(ctx, plan, dropped)
	p.giveBackShortGangs(ctx, in.Pods, dropped)
	return plan
}

// giveBackShortGangs forgets where earlier plans sent the pods of gangs that have been short of
// their minCount for GangCompletionTimeout: those pods were planned onto capacity that the rest
// of their gang never joined, and the scheduler binds none of them until it does. Forgotten, the
// NodeClaims launched for them are no longer wanted and are given back (unneededClaims), and the
// gang is planned again whole, or not at all, from scratch. placed are the pods the round's view
// counts on nodes and capacity in flight.
func (p *Provisioner) giveBackShortGangs(ctx context.Context, placed []*corev1.Pod, short []planner.ShortGang) {
	if p.opts.GangCompletionTimeout <= 0 {
		return
	}
	now := p.opts.Clock.Now()
	since := make(map[planner.Gang]time.Time, len(short))
	gangOf := p.gangOf()
	for _, s := range short {
		began, ok := p.shortSince[s.Gang]
		if !ok {
			began = now
		}
		if now.Sub(began) < p.opts.GangCompletionTimeout {
			since[s.Gang] = began
			continue
		}
		held := append(p.unboundOf(placed, s.Gang, gangOf), p.headedSomewhere(s.Pods)...)
		if len(held) == 0 {
			// Nothing is held for it: there is nothing to give back.
			continue
		}
		p.releaseForGang(s.Gang, held, now)
		klog.FromContext(ctx).Info("Giving back the capacity of a gang that did not complete", "podGroup", s.Gang.String(),
			"minCount", s.Gang.MinCount, "placed", s.Placed, "short for", now.Sub(began), "podsHeld", len(held))
		if pg, err := p.opts.PodGroups.PodGroups(s.Gang.Namespace).Get(s.Gang.Name); err == nil {
			p.opts.Recorder.Eventf(pg, nil, corev1.EventTypeWarning, "GangGivenBack", "Provisioning",
				"PodGroup %s stayed short of minCount %d for %s: the capacity planned for %d of its pods is given back", s.Gang, s.Gang.MinCount,
				p.opts.GangCompletionTimeout, len(held))
		}
		p.forgetHeadings(ctx, held)
		p.mu.Lock()
		p.forgetGated(held)
		p.mu.Unlock()
	}
	// A gang that is no longer short, or whose capacity was just given back, starts afresh.
	p.shortSince = since
}

// releaseForGang marks the claims that held pods (a gang's, given back) to go together at the next
// pass of the stranded watch, whatever their idle time (see unneededClaims). Left to each claim's
// own idle time they went one by one: the first node's going let the gang's pods back into the
// scheduler's queue, which reserved one on the node still up, waiting at Permit for a gang that
// could not complete, and that node stayed until the stranded watch reported it Unused (an "ai"
// suite run of TestGangGivenBackWhenItCannotComplete).
func (p *Provisioner) releaseForGang(gang planner.Gang, held []*corev1.Pod, now time.Time) {
	if p.opts.ClaimLister == nil || p.giveBackAfter() < 0 {
		return
	}
	claims, err := p.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return
	}
	byNode := make(map[string]string, len(claims))
	for _, c := range claims {
		if c.Status.NodeName != "" {
			byNode[c.Status.NodeName] = c.Name
		}
	}
	pods := make(map[types.UID]bool, len(held))
	for _, pod := range held {
		pods[pod.UID] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	mark := func(claim string) {
		if _, ours := p.launchedHere[claim]; ours && claim != "" {
			p.gangReleased[claim] = releasedForGang{gang: gang.String(), at: now, pods: pods}
		}
	}
	for _, pod := range held {
		mark(p.planned[pod.UID])
		mark(byNode[p.destined[pod.UID].node])
		mark(byNode[p.headed[pod.UID].node])
		mark(byNode[p.assumed[pod.UID]])
		// The round's view shows a pod counted on a node (nominated there, say) on that node.
		mark(byNode[pod.Spec.NodeName])
	}
}

// releasedForGang is a claim given back with its gang: which, when, and the gang's pods held
// for, which no longer keep it.
type releasedForGang struct {
	gang string
	at   time.Time
	pods map[types.UID]bool
}

// headedSomewhere are the pods of pending that an earlier plan sent to a node and that are still
// on their way there: planned onto its claim, destined to it or headed for it. A short gang's pods
// are pending once their claims have initialized (the view counts them nowhere then), and the
// nodes launched for them are held for them by these entries alone.
func (p *Provisioner) headedSomewhere(pending []*corev1.Pod) []*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*corev1.Pod
	for _, pod := range pending {
		_, planned := p.planned[pod.UID]
		_, destined := p.destined[pod.UID]
		_, headed := p.headed[pod.UID]
		if planned || destined || headed {
			out = append(out, pod)
		}
	}
	return out
}

// withoutWaitingGangs returns unplaceable less the pods of gangs still within their completion timeout
// (shortSince): the capacity launched for those is theirs until the timeout gives it back, so
// where they are headed is not forgotten with the nominations of other unplaceable pods.
func (p *Provisioner) withoutWaitingGangs(unplaceable []planner.Unplaceable) []planner.Unplaceable {
	if len(p.shortSince) == 0 {
		return unplaceable
	}
	gangOf := p.gangOf()
	out := make([]planner.Unplaceable, 0, len(unplaceable))
	for _, u := range unplaceable {
		if g, ok := gangOf(u.Pod); ok {
			if _, waiting := p.shortSince[g]; waiting {
				continue
			}
		}
		out = append(out, u)
	}
	return out
}

// unboundOf are the pods of the gang that placed counts on a node or on capacity in flight without
// their being bound there: planned, nominated or assumed. placed shows such a pod with the node it
// is counted on in spec.nodeName, so whether it is bound is read from the pod lister.
func (p *Provisioner) unboundOf(placed []*corev1.Pod, gang planner.Gang, gangOf planner.GangOf) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range placed {
		if g, ok := gangOf(pod); !ok || g != gang {
			continue
		}
		if live, err := p.opts.Pods.Pods(pod.Namespace).Get(pod.Name); err == nil && live.UID == pod.UID && live.Spec.NodeName != "" {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// tellShortGangs makes the pods of the gangs left out unplaceable, with why, and records it on
// their PodGroups.
func (p *Provisioner) tellShortGangs(ctx context.Context, plan *planner.Plan, dropped []planner.ShortGang) {
	for _, s := range dropped {
		klog.FromContext(ctx).V(1).Info("Planning nothing for a gang that cannot be placed whole", "podGroup", s.Gang.String(),
			"minCount", s.Gang.MinCount, "placed", s.Placed, "pending", len(s.Pods))
		if pg, err := p.opts.PodGroups.PodGroups(s.Gang.Namespace).Get(s.Gang.Name); err == nil {
			p.opts.Recorder.Eventf(pg, nil, corev1.EventTypeWarning, "FailedProvisioning", "Provisioning", "%s", s.Reason())
		}
		for _, pod := range s.Pods {
			plan.Unplaceable = append(plan.Unplaceable, planner.Unplaceable{Pod: pod, Reasons: map[string]string{"": s.Reason()}})
		}
	}
}

// youngestPod is when the newest of pods was created.
func youngestPod(pods []*corev1.Pod) time.Time {
	var t time.Time
	for _, pod := range pods {
		if c := pod.CreationTimestamp.Time; c.After(t) {
			t = c
		}
	}
	return t
}

// without is pods less those of the gangs.
func without(pods []*corev1.Pod, gangs []planner.ShortGang) []*corev1.Pod {
	drop := map[*corev1.Pod]bool{}
	for _, g := range gangs {
		for _, pod := range g.Pods {
			drop[pod] = true
		}
	}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		if !drop[pod] {
			out = append(out, pod)
		}
	}
	return out
}
