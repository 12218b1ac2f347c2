package provision

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
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
		sg := pod.Spec.SchedulingGroup
		if sg == nil || sg.PodGroupName == nil {
			return planner.Gang{}, false
		}
		pg, err := p.opts.PodGroups.PodGroups(pod.Namespace).Get(*sg.PodGroupName)
		if err != nil || pg.Spec.SchedulingPolicy.Gang == nil {
			return planner.Gang{}, false
		}
		return planner.Gang{Namespace: pod.Namespace, Name: pg.Name, MinCount: int(pg.Spec.SchedulingPolicy.Gang.MinCount)}, true
	}
}

// wholeGangs plans the input so that every gang in it is planned whole (at least MinCount of its
// pods placed) or not at all. A gang that cannot be completed even alone is left out first: no
// plan will complete it now. Gangs that each fit alone but not together are left out youngest
// first, so that the oldest keeps its capacity. The pods of the gangs left out are unplaceable,
// with why, and their PodGroups get an Event.
func (p *Provisioner) wholeGangs(ctx context.Context, pl *planner.Planner, in planner.Input) *planner.Plan {
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
	return plan
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
