package prefilter

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/tailor-sh/tailor/pkg/simulation"
)

// States keeps the PreFilter state of the plan's pods by spec, so that the next identical pod
// starts from it instead of from scratch. PreFilter counts over every pod placed so far (pod
// affinity, spread), so a plan that ran it afresh per pod grew with the square of its size.
//
// A kept state is brought up to date with the framework's AddPod extension, once per pod placed
// since, as preemption does for nominated pods. That is exact where the plugins' AddPod is:
//   - InterPodAffinity and VolumeRestrictions keep counts that AddPod updates as PreFilter would
//     have counted them, and neither reads the set of nodes, only the pods on them and their
//     labels. A new claim is the pods on it added to nodes. A node whose labels changed (a claim
//     that settled into a zone) has its pods taken off it as it was (RemovePod) and put back on
//     it as it is (AddPod), so the counts move with the labels as the plugins count them. Each
//     step is replayed against the node as it was then, not as it is now.
//   - InterPodAffinity skips a pod that no placed pod repels and that has no terms of its own. A
//     placed pod whose anti-affinity terms select the pod can end that, and the framework does
//     not run AddPod for a skipped plugin, so such a placement calls for a fresh state too.
//   - PodTopologySpread keeps counts that AddPod updates too, but it also keeps the two emptiest
//     domains only, which increments can leave stale, and it counts domains (nodes) with no
//     pods, so a domain can appear without a pod moving: such a state is mended after AddPod
//     (spreadstate.go).
//
// Pods with volumes, resource claims or extended resources are not kept: VolumeBinding and
// DynamicResources (which backs extended resources with claims) write per-node results into
// the state during Filter, and two pods of one spec may still have claims of their own. Nor is
// the state of a spec no other pending pod shares: it would never be used again.
type States struct {
	sim *simulation.Simulator
	// kept is nil when nothing is kept (a plan that asks every question afresh).
	kept map[preFilterKey]*keptState
	// placed are the pods this plan put on nodes and the nodes it relabelled, in order.
	placed []placement
	// frozen caches, per node object, a node info that shows it: the node as it was at a step.
	frozen map[*corev1.Node]fwk.NodeInfo
	// shared counts the pending pods of each spec; reused counts the states brought up to date
	// instead of computed (for tests).
	shared map[string]int
	Reused int
	// siblings and counting find, for a spec with no kept state, the kept state of another spec
	// that differs from it in resource requests at most (like.go); Derived counts the states
	// made from them instead of from the nodes (for tests).
	siblings map[siblingKey]*keptState
	counting map[preFilterKey]string
	Derived  int
}

// placement is a pod put on node; or, when before is set, node's labels changed from before's
// with pods on it; or, when opens is set, node joined the view (its pods follow as placements).
type placement struct {
	pod    fwk.PodInfo
	node   fwk.NodeInfo
	before fwk.NodeInfo
	pods   []fwk.PodInfo
	opens  bool
}

// preFilterKey is a pod's spec (the planner's specKey), the step of its preference ladder (-1
// for the pod itself) and the view: with or without the empty domains.
type preFilterKey struct {
	spec    string
	step    int
	domains bool
}

type keptState struct {
	state fwk.CycleState
	pre   *fwk.PreFilterResult
	// at is how much of placed state was last brought up to date with.
	at              int
	affinitySkipped bool
	// spread is set when PodTopologySpread ran: its state is mended after AddPod.
	spread bool
}

func New(sim *simulation.Simulator, fresh bool, specs []string) *States {
	p := &States{sim: sim, shared: map[string]int{}, frozen: map[*corev1.Node]fwk.NodeInfo{}}
	if !fresh {
		p.kept = map[preFilterKey]*keptState{}
	}
	for _, s := range specs {
		p.shared[s]++
	}
	return p
}

// Run returns the PreFilter state of pod, the shape of step (see preferences.Ladder, -1 for the
// pod itself) of a pending pod whose spec is spec, against the view the simulator was last given
// (Use). States are shared between pods of a spec: callers read them (Filter) and keep
// them only for NodeResourcesFit, whose state is the pod's requests, the same for every pod of
// the spec and never touched by AddPod.
func (p *States) Run(ctx context.Context, pod *corev1.Pod, spec string, step int, domains bool) (fwk.CycleState, *fwk.PreFilterResult, *fwk.Status) {
	key := preFilterKey{spec: spec, step: step, domains: domains}
	if k := p.kept[key]; k != nil {
		if p.current(ctx, pod, k) {
			p.Reused++
			return k.state, k.pre, nil
		}
		// current may have replayed part of the placements into it.
		p.forget(k)
	}
	keepable := spec != "" && p.kept != nil && Keepable(pod)
	state, pre, status, ok := p.like(ctx, pod, key, keepable)
	if !ok {
		state, pre, status = p.sim.PreFilter(ctx, pod)
	}
	if status != nil || !keepable {
		return state, pre, status
	}
	skipped := state.GetSkipFilterPlugins()
	spread := !skipped.Has(names.PodTopologySpread)
	if _, ok := SpreadStateOf(state); !spread || ok {
		k := &keptState{state: state, pre: pre, at: len(p.placed),
			affinitySkipped: skipped.Has(names.InterPodAffinity), spread: spread}
		// A spec no other pending pod shares is not kept for itself, but its siblings (like.go)
		// may start from it.
		if p.shared[spec] >= 2 {
			p.kept[key] = k
		}
		p.sibling(ctx, pod, key, k)
	}
	return state, pre, status
}

// current brings k up to date for pod and reports whether it could.
func (p *States) current(ctx context.Context, pod *corev1.Pod, k *keptState) bool {
	since := p.placed[k.at:]
	if len(since) == 0 {
		return true
	}
	// joined are the nodes that joined the view or changed labels since, as they are now; moved
	// are the relabellings.
	var joined []fwk.NodeInfo
	var moved []placement
	for _, pl := range since {
		switch {
		case pl.opens:
			joined = append(joined, pl.node)
		case pl.before != nil:
			// The claim's new labels may give its pods' anti-affinity the topology key it
			// counts by, so InterPodAffinity would stop skipping pod.
			if k.affinitySkipped && slices.ContainsFunc(pl.pods, func(moved fwk.PodInfo) bool { return repels(moved, pod) }) {
				return false
			}
			if i := slices.Index(joined, pl.before); i >= 0 {
				joined[i] = pl.node
			} else {
				joined = append(joined, pl.node)
			}
			moved = append(moved, pl)
		case k.affinitySkipped && repels(pl.pod, pod):
			return false
		}
	}
	for _, pl := range since {
		if pl.opens {
			continue
		}
		if pl.before != nil {
			for _, moved := range pl.pods {
				if !p.sim.RemovePod(ctx, k.state, pod, moved, pl.before).IsSuccess() ||
					!p.sim.AddPod(ctx, k.state, pod, moved, pl.node).IsSuccess() {
					return false
				}
			}
			continue
		}
		if !p.sim.AddPod(ctx, k.state, pod, pl.pod, pl.node).IsSuccess() {
			return false
		}
	}
	if k.spread && !p.mendSpread(ctx, pod, k.state, joined, moved) {
		return false
	}
	k.at = len(p.placed)
	return true
}

// mendSpread completes a kept spread state that AddPod and RemovePod brought up to date: the
// domains the nodes that joined or moved bring, and the emptiest domains (spreadstate.go).
func (p *States) mendSpread(ctx context.Context, pod *corev1.Pod, state fwk.CycleState, joined []fwk.NodeInfo, moved []placement) bool {
	s, ok := SpreadStateOf(state)
	if !ok {
		return false
	}
	if len(joined) > 0 {
		added, ok := p.spreadOver(ctx, pod, joined)
		if !ok || !s.addDomains(added) {
			return false
		}
	}
	for _, m := range moved {
		// A relabelled node may leave a domain: a label that changes value, or one that appears
		// and makes the pod's node affinity refuse it under the Honor inclusion policy (a
		// NotIn). The domain may then be left with no node, which only a fresh state counts.
		was, ok := p.spreadOver(ctx, pod, []fwk.NodeInfo{m.before})
		if !ok {
			return false
		}
		is, ok := p.spreadOver(ctx, pod, []fwk.NodeInfo{m.node})
		if !ok {
			return false
		}
		for i, domains := range was.Counts {
			for domain := range domains {
				if _, kept := is.Counts[i][domain]; !kept {
					return false
				}
			}
		}
	}
	s.FindMinima()
	return true
}

// spreadOver is PodTopologySpread's state for pod over nodes alone.
func (p *States) spreadOver(ctx context.Context, pod *corev1.Pod, nodes []fwk.NodeInfo) (spreadState, bool) {
	state, ok := p.sim.SpreadDomains(ctx, pod, nodes)
	if !ok {
		return spreadState{}, false
	}
	return SpreadStateOf(state)
}

// repels reports whether placed's required anti-affinity may select pod, which would make
// InterPodAffinity stop skipping pod. A term with a namespace selector is taken to select it:
// the namespace's labels are the plugin's to read.
func repels(placed fwk.PodInfo, pod *corev1.Pod) bool {
	terms := placed.GetRequiredAntiAffinityTerms()
	if len(terms) == 0 {
		return false
	}
	if a := placed.GetPod().Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.NamespaceSelector != nil {
				return true
			}
		}
	}
	for i := range terms {
		if terms[i].Matches(pod, nil) {
			return true
		}
	}
	return false
}

// Keepable reports whether pod's state may be kept: see States.
func Keepable(pod *corev1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return false
		}
	}
	// The names PodRequests would sum, read without summing them: a plan asks this of every
	// pod it places.
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !allNative(cs[i].Resources.Requests) {
				return false
			}
		}
	}
	return allNative(pod.Spec.Overhead) && (pod.Spec.Resources == nil || allNative(pod.Spec.Resources.Requests))
}

// allNative reports whether every resource named in list is a native one.
func allNative(list corev1.ResourceList) bool {
	for name := range list {
		if !v1helper.IsNativeResource(name) {
			return false
		}
	}
	return true
}

// Add records that pod now runs on node.
func (p *States) Add(pod fwk.PodInfo, node fwk.NodeInfo) {
	p.placed = append(p.placed, placement{pod: pod, node: p.frozenOf(node.Node())})
}

// frozenOf returns a node info that shows node, whatever node's claim becomes later. The
// PreFilter extensions read only the node (its labels) of the node info they are given.
func (p *States) frozenOf(node *corev1.Node) fwk.NodeInfo {
	if ni, ok := p.frozen[node]; ok {
		return ni
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	p.frozen[node] = ni
	return ni
}

// Opened records a new claim, with the pods on it (its daemons and its first pod).
func (p *States) Opened(node fwk.NodeInfo) {
	p.placed = append(p.placed, placement{node: p.frozenOf(node.Node()), opens: true})
	for _, pod := range node.GetPods() {
		p.Add(pod, node)
	}
}

// Relabelled records that node, which was before and held its first n pods then, has new labels.
func (p *States) Relabelled(node fwk.NodeInfo, before *corev1.Node, n int) {
	pods := slices.Clone(node.GetPods()[:n])
	p.placed = append(p.placed, placement{node: p.frozenOf(node.Node()), before: p.frozenOf(before), pods: pods})
}
