package planner

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
)

// openClaim is a NodeClaim being filled during a plan.
//
// It holds its pods once, in info, rather than once per offering it may launch as. alive are the
// offerings (indices into the pool's compatible list, cheapest first) on which every pod so far
// passed the placement half of Filter. Which of them also pass the capacity half is settled
// lazily: NodeResourcesFit reads only the node's allocatable against the sum of its pods, so an
// offering whose type holds the pods now held every earlier subset of them, and the types that
// still hold the claim are exactly those on which the last pod passed with the others in place.
type openClaim struct {
	name    string
	pool    *nodepool.State
	pods    []*corev1.Pod
	daemons []*corev1.Pod
	alive   []int
	// info is the node the claim will become as far as its alive offerings agree (see
	// plannedNode), with its daemons and pods; plugins count it in PreFilter as a planned node.
	info *framework.NodeInfo
	// before is what info had requested before the last pod, and lastState that pod's cycle
	// state: with them, the capacity half is asked again for the last pod on any type.
	before    *framework.Resource
	lastPod   *corev1.Pod
	lastState fwk.CycleState
	// frontier caches the types of alive that no other type of alive dominates (of its efficient
	// offerings only, when thrifty).
	frontier []int
	// thrifty claims take a pod only if an efficient offering holds it (see nodepool.State.RateEfficiency): the
	// claim grows no bigger than the types that are cheap for the batch, while every alive
	// offering that holds its pods in the end is still an option the cloud may fall back on.
	thrifty bool
	// chosen are the values the claim's pods settled for the pool's free custom keys; a key not
	// here is still open (see customlabels.go).
	chosen nodepool.LabelChoice
	// shells caches, per offering, a NodeInfo of its template node named after the claim, with
	// the chosen labels; trials caches those with values a pod tries on top of them.
	shells map[int]*framework.NodeInfo
	trials map[trialShell]*framework.NodeInfo
	// capacity is the most the claim may launch as, counted against its pool's limits.
	capacity corev1.ResourceList
	// groups caches, per key signature, the classes alive falls into.
	groups map[string][]classGroup
	// kinds are the kinds of the claim's pods that repel their own kind (see fill.go).
	kinds []kindID
	// refusal is why weigh last refused a pod for the pool's minValues, for explanations;
	// placementRefused says whether weigh last refused a pod because the placement half of
	// Filter failed in every class of the claim's offerings, whatever labels it might choose.
	refusal          string
	placementRefused bool
	// cover and coverFit: see cover.go.
	cover    map[corev1.ResourceName]*coverPod
	coverFit map[coverKey]bool
}

// classGroup is one class of a claim's alive offerings: the placement plugins cannot tell its
// offerings apart, so first stands for all of them.
type classGroup struct {
	class int32
	first int
}

// classGroups returns the classes of alive for pods that read keys, and the class of every
// offering of the pool.
func (oc *openClaim) classGroups(keys podkeys.Keys) ([]classGroup, []int32) {
	classes := oc.pool.ClassesFor(keys)
	sig := keys.Signature()
	if g, ok := oc.groups[sig]; ok {
		return g, classes
	}
	seen := map[int32]bool{}
	var groups []classGroup
	for _, i := range oc.alive {
		if !seen[classes[i]] {
			seen[classes[i]] = true
			groups = append(groups, classGroup{class: classes[i], first: i})
		}
	}
	if oc.groups == nil {
		oc.groups = map[string][]classGroup{}
	}
	oc.groups[sig] = groups
	return groups, classes
}

func newOpenClaim(name string, ps *nodepool.State, daemons []*corev1.Pod, alive []int) *openClaim {
	oc := &openClaim{name: name, pool: ps, daemons: daemons, alive: alive, shells: map[int]*framework.NodeInfo{}}
	oc.info = framework.NewNodeInfo()
	oc.info.SetNode(oc.plannedNode())
	for _, d := range daemons {
		oc.info.AddPod(clusterview.OnNode(d, name))
	}
	return oc
}

// check is one pod weighed against a claim: what the claim's alive offerings would become.
type check struct {
	pod      *corev1.Pod
	requests corev1.ResourceList
	state    fwk.CycleState
	// guard, when set, must pass where the pod does: see asScheduled.
	guard *asScheduled
	// fits caches the capacity half per type: 1 passes, -1 fails.
	fits map[int]int8
}

// asScheduled is a pending pod as the scheduler will weigh it, with its PreFilter state, checked
// beside a shape of it that is not strictly stricter (narrowsSpread).
type asScheduled struct {
	pod   *corev1.Pod
	state fwk.CycleState
}

// capacityFits asks NodeResourcesFit whether the pod fits on type t with the claim's pods.
func (pl *Planner) capacityFits(ctx context.Context, oc *openClaim, ck *check, t int) bool {
	if v, ok := ck.fits[t]; ok {
		return v > 0
	}
	view := &pl.scratch.capacity
	*view = *oc.info
	view.Allocatable = oc.pool.Types[t].Alloc
	ok := pl.sim.FilterCapacity(ctx, ck.state, ck.pod, view).IsSuccess() && pl.coverFits(ctx, oc, t, ck.requests)
	ck.fits[t] = -1
	if ok {
		ck.fits[t] = 1
	}
	return ok
}

// anyCapacity reports whether the pod fits some type of alive: by dominance, some type of its
// frontier.
func (pl *Planner) anyCapacity(ctx context.Context, oc *openClaim, ck *check, alive []int, frontier []int) bool {
	if frontier == nil {
		frontier = oc.frontierOf(alive)
	}
	for _, t := range frontier {
		if pl.capacityFits(ctx, oc, ck, t) {
			return true
		}
	}
	return false
}

// weigh returns the offerings of oc the pod would leave alive, and the values it settles for
// open custom keys, the first of its choices it fits with; nil when it fits none.
func (pl *Planner) weigh(ctx context.Context, oc *openClaim, pod *corev1.Pod, state fwk.CycleState, guard *asScheduled, keys podkeys.Keys) ([]int, nodepool.LabelChoice) {
	ck := &check{pod: pod, requests: pl.requestsOf(pod), state: state, guard: guard, fits: map[int]int8{}}
	if oc.frontier == nil {
		oc.frontier = oc.frontierOf(oc.alive)
	}
	oc.placementRefused = false
	// Capacity first: it is the cheap question, and a full claim is the common refusal.
	if !pl.anyCapacity(ctx, oc, ck, oc.alive, oc.frontier) {
		return nil, nil
	}
	choices := oc.pool.Choices(pod, keys, oc.chosen)
	everywhere := len(choices) > 0
	for _, choice := range choices {
		alive, placement := pl.weighWith(ctx, oc, ck, keys, choice)
		if alive != nil {
			return alive, choice
		}
		everywhere = everywhere && placement
	}
	oc.placementRefused = everywhere
	return nil, nil
}

// weighWith is weigh for the claim labelled with choice on top of its chosen labels. placement
// reports a refusal by the placement half in every class of the claim's offerings.
func (pl *Planner) weighWith(ctx context.Context, oc *openClaim, ck *check, keys podkeys.Keys, choice nodepool.LabelChoice) (alive []int, placement bool) {
	groups, classes := oc.classGroups(keys)
	failed := map[int32]bool{}
	for _, g := range groups {
		view := oc.placementView(g.first, choice, &pl.scratch.placement)
		if !pl.sim.FilterPlacement(ctx, ck.state, ck.pod, view).IsSuccess() ||
			ck.guard != nil && !pl.sim.FilterPlacement(ctx, ck.guard.state, ck.guard.pod, view).IsSuccess() {
			failed[g.class] = true
		}
	}
	alive = oc.alive
	if len(failed) == len(groups) {
		return nil, true
	}
	if len(failed) > 0 {
		alive = make([]int, 0, len(oc.alive))
		for _, i := range oc.alive {
			if !failed[classes[i]] {
				alive = append(alive, i)
			}
		}
	}
	if len(alive) != len(oc.alive) && !pl.anyCapacity(ctx, oc, ck, alive, nil) {
		return nil, false
	}
	alive = pl.settle(ctx, oc, ck, alive, keys.Topology)
	if alive != nil && pl.strictMinValues() {
		if why := pl.minValuesAfter(ctx, oc, ck, alive); why != "" {
			oc.refusal = why
			return nil, false
		}
	}
	return alive, false
}

// settle narrows alive to one domain of each topology key the pod is counted in: the domain of
// the cheapest offering that holds the pod. Until the claim launches it could land in any domain
// its offerings span, and plugins would count its pods in none of them.
func (pl *Planner) settle(ctx context.Context, oc *openClaim, ck *check, alive []int, topology []string) []int {
	if len(topology) == 0 {
		return alive
	}
	compatible := oc.pool.Compatible
	domains := oc.pool.DomainsOf(topology)
	agree := true
	for _, i := range alive[1:] {
		if domains[i] != domains[alive[0]] {
			agree = false
			break
		}
	}
	if agree {
		return alive
	}
	for _, i := range alive {
		if !pl.capacityFits(ctx, oc, ck, compatible[i].Typ) {
			continue
		}
		out := alive[:0:0]
		for _, j := range alive {
			if domains[j] == domains[i] {
				out = append(out, j)
			}
		}
		return out
	}
	return nil
}

// add puts the pod on the claim, which may now launch only as alive, labelled with choice, and
// reports whether that changed the labels of the node the claim will become.
func (oc *openClaim) add(pod *corev1.Pod, requests corev1.ResourceList, info fwk.PodInfo, state fwk.CycleState, alive []int, choice nodepool.LabelChoice) bool {
	defer oc.noteCover(pod, requests, state)
	oc.before = oc.info.Requested.Clone()
	oc.lastPod, oc.lastState = pod, state
	oc.pods = append(oc.pods, pod)
	if len(choice) > 0 {
		oc.chosen = append(slices.Clip(oc.chosen), choice...)
		oc.shells, oc.trials = map[int]*framework.NodeInfo{}, nil
	}
	narrowed := len(alive) != len(oc.alive)
	if narrowed {
		oc.alive = alive
		oc.frontier = nil
		oc.groups = nil
	}
	relabelled := false
	if narrowed || len(choice) > 0 {
		node := oc.plannedNode()
		relabelled = !maps.Equal(node.Labels, oc.info.Node().Labels)
		oc.info.SetNode(node)
	}
	oc.info.AddPodInfo(info)
	return relabelled
}

// holding returns the alive offerings whose type holds every pod of the claim, cheapest first.
// With maxTypes > 0 it asks about no more types once that many hold: alive is in price order, so
// those are the cheapest that hold, and only their offerings are returned.
func (pl *Planner) holding(ctx context.Context, oc *openClaim, maxTypes int) []int {
	if oc.lastPod == nil {
		return oc.alive
	}
	// One view for every type: only its allocatable changes between questions.
	view := *oc.info
	view.Pods = view.Pods[:len(view.Pods)-1]
	view.Requested = oc.before
	// fits is each type's answer: 1 holds, -1 does not, 0 not asked.
	fits := make([]int8, len(oc.pool.Types))
	held := 0
	last := pl.requestsOf(oc.lastPod)
	var out []int
	for _, i := range oc.alive {
		t := oc.pool.Compatible[i].Typ
		if fits[t] == 0 {
			if maxTypes > 0 && held == maxTypes {
				continue
			}
			view.Allocatable = oc.pool.Types[t].Alloc
			fits[t] = -1
			if pl.sim.FilterCapacity(ctx, oc.lastState, oc.lastPod, &view).IsSuccess() && pl.coverFits(ctx, oc, t, last) {
				fits[t] = 1
				held++
			}
		}
		if fits[t] > 0 {
			out = append(out, i)
		}
	}
	return out
}

// frontierOf is the pool's frontier of alive, or of its efficient offerings when the claim is
// thrifty.
func (oc *openClaim) frontierOf(alive []int) []int {
	if oc.thrifty {
		alive = oc.pool.EfficientOf(alive)
	}
	return oc.pool.FrontierOf(alive)
}
