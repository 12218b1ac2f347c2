package prefilter

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
)

// Siblings. Pods of a Deployment that differ in size only, or the five classes of Karpenter's
// benchmark with thirty sizes each, are specs of their own, and the first pod of each spec used
// to run PreFilter from scratch: InterPodAffinity and PodTopologySpread walk every pod on every
// node in view, so a plan of n pods over k specs walked k times a fleet that grows with n. At
// 20,000 pods of the benchmark (150 specs, 4,000 claims) that, and the same walk in the check
// beside the plan (finish.go), was two fifths of the plan's CPU. Those two plugins read nothing
// of the pod that its size changes (simulation.PreFilterLike), so a spec whose sibling, a spec
// equal to it but for resources (podkeys.CountingKey), has a kept state starts from a copy of
// the sibling's counts, brought up to date first, and runs only the other PreFilter plugins,
// which read the pod alone.

// siblingKey is a spec's counting key and its view (with the empty domains or not). The step of
// the preference ladder is not part of it: the counting key is that of the shape itself.
type siblingKey struct {
	counting string
	domains  bool
}

// like returns pod's PreFilter state made from a sibling's kept state, or ok false when there
// is none to make it from (the caller runs PreFilter).
func (p *States) like(ctx context.Context, pod *corev1.Pod, key preFilterKey, keepable bool) (fwk.CycleState, *fwk.PreFilterResult, *fwk.Status, bool) {
	if !keepable {
		return nil, nil, nil, false
	}
	sk, ok := p.siblingKeyOf(pod, key)
	if !ok {
		return nil, nil, nil, false
	}
	k := p.siblings[sk]
	if k == nil {
		return nil, nil, nil, false
	}
	// current replays into the sibling's state the placements since it was last brought up to
	// date, with pod as the incoming pod: the plugins' AddPod reads of it what the counting key
	// holds equal.
	if !p.current(ctx, pod, k) {
		p.forget(k)
		return nil, nil, nil, false
	}
	state, pre, status, ok := p.sim.PreFilterLike(ctx, pod, k.state)
	if ok {
		p.Derived++
	}
	return state, pre, status, ok
}

// sibling records k, the state kept for pod under key, as the one its siblings start from.
func (p *States) sibling(_ context.Context, pod *corev1.Pod, key preFilterKey, k *keptState) {
	if sk, ok := p.siblingKeyOf(pod, key); ok {
		if p.siblings == nil {
			p.siblings = map[siblingKey]*keptState{}
		}
		p.siblings[sk] = k
	}
}

// siblingKeyOf returns the sibling key of pod, kept under key; the counting key is computed once
// per key (it marshals the pod).
func (p *States) siblingKeyOf(pod *corev1.Pod, key preFilterKey) (siblingKey, bool) {
	c, ok := p.counting[key]
	if !ok {
		c = podkeys.CountingKey(pod)
		if p.counting == nil {
			p.counting = map[preFilterKey]string{}
		}
		p.counting[key] = c
	}
	return siblingKey{counting: c, domains: key.domains}, c != ""
}

// forget drops k, a state current could not bring up to date (it may have replayed part of the
// placements into it), wherever it is kept.
func (p *States) forget(k *keptState) {
	maps.DeleteFunc(p.kept, func(_ preFilterKey, v *keptState) bool { return v == k })
	maps.DeleteFunc(p.siblings, func(_ siblingKey, v *keptState) bool { return v == k })
}
