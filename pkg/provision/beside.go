package provision

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

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
//     grows past maxSkew. Harness seed 2008: replicas that must share a zone (required pod
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
func (pl *Planner) finish(ctx context.Context, plan *Plan, snapshot *simulation.Snapshot, open []*openClaim, defaultKeys []string, specs map[*corev1.Pod]string) {
	// The claims' offerings first: besideThePlan takes pods off the claims' nodes.
	claims := make([]*PlannedClaim, len(open))
	for i, oc := range open {
		claims[i] = pl.planned(ctx, oc)
	}
	refused := pl.besideThePlan(ctx, snapshot, open, defaultKeys, specs)
	for i, oc := range open {
		pc := claims[i]
		if len(refused) > 0 {
			pc.Pods = slices.DeleteFunc(slices.Clone(pc.Pods), func(p *corev1.Pod) bool { _, ok := refused[p.UID]; return ok })
			if len(pc.Pods) == 0 {
				continue
			}
		}
		if pc.MinValuesShort != "" && pl.strictMinValues() {
			why := fmt.Sprintf("the instance types that hold its claim fall short of minValues: %s", pc.MinValuesShort)
			for _, pod := range pc.Pods {
				plan.Unplaceable = append(plan.Unplaceable, Unplaceable{Pod: pod, Reasons: map[string]string{oc.pool.NodePool.Name: why}})
			}
			continue
		}
		plan.Claims = append(plan.Claims, pc)
	}
	for _, oc := range open {
		for _, pod := range oc.pods {
			if u, ok := refused[pod.UID]; ok {
				plan.Unplaceable = append(plan.Unplaceable, u)
			}
		}
	}
}

// besideThePlan returns the pods of the plan's claims that the scheduler would refuse on their
// claims beside the rest of the plan, and takes them off the claims' nodes (oc.info). The claims'
// offerings are computed before (planned): fewer pods never need a bigger type. specs are the
// pods' spec keys.
func (pl *Planner) besideThePlan(ctx context.Context, snapshot *simulation.Snapshot, open []*openClaim, defaultKeys []string, specs map[*corev1.Pod]string) map[types.UID]Unplaceable {
	infos := make([]fwk.NodeInfo, 0, len(open))
	for _, oc := range open {
		infos = append(infos, oc.info)
	}
	pl.sim.Use(snapshot, infos...)
	b := &beside{pl: pl, logger: klog.FromContext(ctx), states: map[string]*specState{}}
	refused := map[types.UID]Unplaceable{}
	// Each round takes a pod off or ends; the bound only guards against a plugin whose answer
	// flips back and forth.
	for range 4 {
		took := false
		for _, oc := range open {
			for _, pod := range oc.pods {
				if _, gone := refused[pod.UID]; gone || !countsOthers(pod, defaultKeys) {
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
			}
		}
		if !took {
			break
		}
	}
	return refused
}

// beside weighs the plan's pods on their claims. PreFilter over the whole plan costs as much as
// placing the pod did, so it runs once per spec, with the first pod of the spec in view, and each
// pod of the spec starts from a copy of that state with itself taken out (RemovePod, which the
// plugins count exactly, as preemption relies on). A pod taken off a claim changes what every
// state counted, so the states are made again after it.
type beside struct {
	pl     *Planner
	logger klog.Logger
	states map[string]*specState
}

type specState struct {
	state fwk.CycleState
	pre   *fwk.PreFilterResult
	ok    bool
}

// refusedOn weighs pod on its claim without it, as the scheduler will, and returns the Filter's
// answer when it is a refusal, "" when it passes. A pod that passes is put back; one refused
// stays off the claim's node, so the pods weighed after it do not count it.
func (b *beside) refusedOn(ctx context.Context, oc *openClaim, pod *corev1.Pod, spec string) string {
	sim := b.pl.sim
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		return ""
	}
	var state fwk.CycleState
	var pre *fwk.PreFilterResult
	if spec != "" && keepable(pod) {
		st := b.states[spec]
		if st == nil {
			s, p, status := sim.PreFilter(ctx, pod)
			st = &specState{state: s, pre: p, ok: status == nil}
			b.states[spec] = st
		}
		if st.ok {
			state, pre = st.state.Clone(), st.pre
			if !sim.RemovePod(ctx, state, pod, info, oc.info).IsSuccess() {
				state = nil
			}
		}
	}
	if err := oc.info.RemovePod(b.logger, pod); err != nil {
		return "" // not on the node: nothing to weigh
	}
	var status *fwk.Status
	if state == nil {
		state, pre, status = sim.PreFilter(ctx, pod)
	}
	if status == nil && !allowedByPreFilter(pre, oc.name) {
		status = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) PreFilter result")
	}
	if status == nil {
		status = sim.FilterPlacement(ctx, state, pod, oc.info)
	}
	if status.IsSuccess() {
		oc.info.AddPodInfo(info)
		return ""
	}
	clear(b.states)
	return status.Message()
}

// countsOthers reports whether the scheduler's answer for pod can change with pods and nodes
// placed after it: it spreads (DoNotSchedule, its own constraints or the profile's defaults) or
// has required pod affinity.
func countsOthers(pod *corev1.Pod, defaultKeys []string) bool {
	if spreads(pod, defaultKeys) {
		return true
	}
	a := pod.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}
