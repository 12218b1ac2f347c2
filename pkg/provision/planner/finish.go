package planner

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/provision/planner/prefilter"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// A plan places its pods one after another, and each is weighed against the nodes and claims
// there are at its turn. The scheduler weighs each against everything there is at its own turn:
// every node the plan launches, whatever pod it was launched for. For most constraints the two
// agree, because the pods placed later were weighed with the earlier ones in view (resources,
// ports, anti-affinity, which the plugins check both ways). Two do not:
//
//   - Topology spread (DoNotSchedule): a claim opened later for other pods can be a domain the
//     spread counts, empty of the spreading pods, so the skew the earlier pods were placed with
//     grows past maxSkew. For example, replicas that must share a zone (required pod
//     affinity) and spread by zone with maxSkew 1 went, four of them, to claims in one zone, as
//     the scheduler would take them while that was the only zone with nodes; claims opened next
//     for a Job put nodes in two more zones, and the scheduler refused all but one replica there.
//     Two nodes launched for nothing.
//   - Required pod affinity, when a pod was placed by its first-pod rule (no pod matched its
//     term anywhere) and a matching pod was then placed in another domain.
//
// So before its claims are made, the pods with either constraint on them are weighed once more,
// each as the scheduler will weigh it: on its claim, with every other pod of the plan and every
// claim of the plan in view, and without the empty domains (domains.go), which the scheduler
// does not count. A pod it refuses is taken off its claim and is unplaceable in this plan, with
// the Filter's answer; the next plan, which sees the claims launching, places it again. Taking a
// pod off can change the answer for the others (the pod a sibling's affinity leaned on), so the
// pods are weighed again until none is taken off.

// finish turns the plan's open claims into the claims to create, less the pods the scheduler
// would refuse beside the rest of the plan (besideThePlan), which become unplaceable.
func (p *planning) finish(ctx context.Context) {
	pl, plan, snapshot, open, defaultKeys, specs := p.pl, p.plan, p.snapshot, p.open, p.defaultKeys, p.specs
	// The claims' offerings first: besideThePlan takes pods off the claims' nodes, and fewer pods
	// never need a bigger type.
	offerings := make([][]int, len(open))
	var live []*openClaim
	for i, oc := range open {
		offerings[i] = pl.plannedOfferings(ctx, oc)
		if short := oc.pool.MinValuesShort(offerings[i]); short != "" && pl.strictMinValues() {
			why := fmt.Sprintf("the instance types that hold its claim fall short of minValues: %s", short)
			for _, pod := range oc.pods {
				plan.Unplaceable = append(plan.Unplaceable, Unplaceable{Pod: pod, Reasons: map[string]string{oc.pool.NodePool.Name: why}})
			}
			offerings[i] = nil
			continue
		}
		live = append(live, oc)
	}
	spreadKeys := spreadKeysOf(live, defaultKeys)
	domains := domainsOf(snapshot, live, spreadKeys)
	for i, oc := range open {
		if offerings[i] != nil {
			offerings[i] = oc.settleFor(offerings[i], spreadKeys, domains)
		}
	}
	refused := pl.besideThePlan(ctx, snapshot, live, defaultKeys, specs, p.fresh)
	reservations := newReservationLedger()
	held := pl.sparingTheLaunching(ctx, snapshot, live, p.launching, refused, defaultKeys, specs)
	for i, oc := range open {
		if offerings[i] == nil {
			continue
		}
		if why, ok := held[oc]; ok {
			for _, pod := range oc.pods {
				if _, gone := refused[pod.UID]; !gone {
					plan.Unplaceable = append(plan.Unplaceable, Unplaceable{Pod: pod, Reasons: map[string]string{"": why}})
				}
			}
			continue
		}
		pods := oc.pods
		if len(refused) > 0 {
			pods = slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { _, ok := refused[p.UID]; return ok })
			if len(pods) == 0 {
				continue
			}
		}
		pc := oc.claimOf(reservations.take(oc.pool, offerings[i]))
		pc.Pods = pods
		plan.Claims = append(plan.Claims, pc)
	}
	for _, oc := range live {
		for _, pod := range oc.pods {
			if u, ok := refused[pod.UID]; ok {
				plan.Unplaceable = append(plan.Unplaceable, u)
			}
		}
	}
}

// besideThePlan returns the pods of the claims that the scheduler would refuse on their claims
// beside the rest of the plan, and takes them off the claims' nodes (oc.info). specs are the
// pods' spec keys; fresh makes a PreFilter state per pod rather than one per spec (see Planner.plan).
func (pl *Planner) besideThePlan(ctx context.Context, snapshot *simulation.Snapshot, claims []*openClaim, defaultKeys []string, specs map[*corev1.Pod]string, fresh bool) map[types.UID]Unplaceable {
	b := newBeside(ctx, pl, snapshot, fresh)
	b.show(claims)
	refused := map[types.UID]Unplaceable{}
	left := map[*openClaim]int{}
	for _, oc := range claims {
		left[oc] = len(oc.pods)
	}
	// A pod taken off never comes back, so each round takes one off or is the last.
	for took := true; took; {
		took = false
		for _, oc := range claims {
			for _, pod := range oc.pods {
				if _, gone := refused[pod.UID]; gone || !podkeys.CountsOthers(pod, defaultKeys) {
					continue
				}
				why := b.refusedOn(ctx, oc, pod, specs[pod])
				if why == "" {
					continue
				}
				refused[pod.UID] = Unplaceable{Pod: pod, Reasons: map[string]string{"": fmt.Sprintf(
					"the scheduler would refuse it on the node planned for it once the plan's other nodes run (%s); "+
						"it is planned again with them in view", why)}}
				took = true
				if left[oc]--; left[oc] == 0 {
					// Not launched: no longer a domain the others are counted in.
					b.show(slices.DeleteFunc(slices.Clone(claims), func(c *openClaim) bool { return left[c] == 0 }))
				}
			}
		}
	}
	return refused
}

// beside weighs the plan's pods on their claims. PreFilter over the whole plan costs as much as
// placing the pod did, so it runs once per spec, with the first pod of the spec in view, and each
// pod of the spec is weighed on that state with itself taken out (RemovePod, which the plugins
// count exactly, as preemption relies on) and then put back (AddPod). A pod taken off a claim is
// taken out of every kept state the same way; a claim left empty leaves the view, and the states
// are made again. (Each pod used to weigh a copy of the state instead: PodTopologySpread's holds
// a count per domain, so with hostname spread every pod copied one per claim, which at 20,000
// pods of Karpenter's mix was 0.8 GB of the plan's 2.2 GB allocated.)
type beside struct {
	pl       *Planner
	snapshot *simulation.Snapshot
	logger   klog.Logger
	states   map[string]*specState
	// siblings are the states of states by counting key, and counting the counting key of each
	// spec (like).
	siblings map[string]*specState
	counting map[string]string
	// fresh shares no state between the pods of a spec.
	fresh bool
}

func newBeside(ctx context.Context, pl *Planner, snapshot *simulation.Snapshot, fresh bool) *beside {
	return &beside{pl: pl, snapshot: snapshot, logger: klog.FromContext(ctx), fresh: fresh,
		states: map[string]*specState{}, siblings: map[string]*specState{}, counting: map[string]string{}}
}

// specState is the PreFilter state of pod with every pod in view, shared by its spec's pods when
// shared.
type specState struct {
	pod    *corev1.Pod
	state  fwk.CycleState
	pre    *fwk.PreFilterResult
	status *fwk.Status
	shared bool
	// spoilt is set when a pod could not be taken out of the state or put back: it is made again.
	spoilt bool
}

// show makes the simulator see the snapshot and claims, and forgets the states made with another
// view: a claim that leaves it is a domain fewer.
func (b *beside) show(claims []*openClaim) {
	infos := make([]fwk.NodeInfo, 0, len(claims))
	for _, oc := range claims {
		infos = append(infos, oc.info)
	}
	b.pl.sim.Use(b.snapshot, infos...)
	clear(b.states)
	clear(b.siblings)
}

// refusedOn weighs pod on its claim without it, as the scheduler will, and returns the Filter's
// answer when it is a refusal, "" when it passes. A pod that passes is put back; one refused
// stays off the claim's node, so the pods weighed after it do not count it.
func (b *beside) refusedOn(ctx context.Context, oc *openClaim, pod *corev1.Pod, spec string) string {
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		return ""
	}
	st := b.stateOf(ctx, pod, spec)
	if err := oc.info.RemovePod(b.logger, pod); err != nil {
		return "" // not on the node: nothing to weigh
	}
	status := b.answer(ctx, st, pod, info, oc.name, oc.info)
	if status.IsSuccess() {
		oc.info.AddPodInfo(info)
		return ""
	}
	b.logger.V(3).Info("Refused beside the plan", "pod", klog.KObj(pod), "claim", oc.name, "plugin", status.Plugin(), "why", status.Message())
	// The pod is off its claim: every state that counted it counts it no more.
	for spec, st := range b.states {
		if st.status == nil && !b.pl.sim.RemovePod(ctx, st.state, st.pod, info, oc.info).IsSuccess() {
			st.spoilt = true // a sibling no longer starts from it
			delete(b.states, spec)
		}
	}
	return status.Message()
}

// refusedAt is refusedOn for a pod the plan left on node, a node of the snapshot, which stays as
// it is: the pod is weighed on a copy without it.
func (b *beside) refusedAt(ctx context.Context, node fwk.NodeInfo, pod *corev1.Pod, spec string) string {
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		return ""
	}
	st := b.stateOf(ctx, pod, spec)
	if st.status != nil {
		return "" // PreFilter counted the pod against itself (its volumes): cannot say
	}
	view := node.Snapshot()
	if err := view.RemovePod(b.logger, pod); err != nil {
		return ""
	}
	if status := b.answer(ctx, st, pod, info, node.Node().Name, view); !status.IsSuccess() {
		return status.Message()
	}
	return ""
}

// stateOf returns pod's PreFilter state with pod in view: its spec's, kept for the spec's other
// pods, or its own when it cannot be shared (keepable).
func (b *beside) stateOf(ctx context.Context, pod *corev1.Pod, spec string) *specState {
	// A planner that keeps no PreFilter states keeps none here either: the tests that compare
	// the two check this one too.
	shared := spec != "" && prefilter.Keepable(pod) && !b.fresh
	if st := b.states[spec]; shared && st != nil && !st.spoilt {
		return st
	}
	s, p, status, ok := b.like(ctx, pod, spec, shared)
	if !ok {
		s, p, status = b.pl.sim.PreFilter(ctx, pod)
	}
	st := &specState{pod: pod, state: s, pre: p, status: status, shared: shared}
	if shared {
		b.states[spec] = st
		if status == nil {
			b.siblings[b.countingKey(pod, spec)] = st
		}
	}
	return st
}

// like is pod's state made from a sibling spec's (one that differs in resources at most, see
// prefilter/like.go), which has every pod in view as pod's must: the walk over every pod of the
// plan, once per spec, was most of what this check cost. ok is false when there is none.
func (b *beside) like(ctx context.Context, pod *corev1.Pod, spec string, shared bool) (fwk.CycleState, *fwk.PreFilterResult, *fwk.Status, bool) {
	if !shared {
		return nil, nil, nil, false
	}
	sib := b.siblings[b.countingKey(pod, spec)]
	if sib == nil || sib.spoilt {
		return nil, nil, nil, false
	}
	return b.pl.sim.PreFilterLike(ctx, pod, sib.state)
}

// countingKey is the counting key of spec, whose pod is pod, computed once per spec.
func (b *beside) countingKey(pod *corev1.Pod, spec string) string {
	c, ok := b.counting[spec]
	if !ok {
		c = podkeys.CountingKey(pod)
		b.counting[spec] = c
	}
	return c
}

// answer is the Filter's answer for pod on node (named name), which does not hold it, from st,
// a state with the pod in view, with the pod taken out of it for the question.
func (b *beside) answer(ctx context.Context, st *specState, pod *corev1.Pod, info fwk.PodInfo, name string, node fwk.NodeInfo) *fwk.Status {
	if st.status != nil {
		return st.status
	}
	if s := b.pl.sim.RemovePod(ctx, st.state, pod, info, node); !s.IsSuccess() {
		st.spoilt = true // some plugins may have taken it out
		return nil       // cannot say: let it be
	}
	var status *fwk.Status
	if simulation.AllowedByPreFilter(st.pre, name) {
		status = b.pl.sim.FilterPlacement(ctx, st.state, pod, node)
	} else {
		status = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) PreFilter result")
	}
	// The state is the spec's: the pod goes back into it for the next pod of the spec.
	if st.shared && !b.pl.sim.AddPod(ctx, st.state, pod, info, node).IsSuccess() {
		st.spoilt = true
	}
	return status
}
