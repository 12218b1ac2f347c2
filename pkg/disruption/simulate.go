package disruption

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Planner is the part of the provisioning planner a simulation asks.
type Planner interface {
	Plan(ctx context.Context, in planner.Input) *planner.Plan
	// ResourcesFiltered reports whether the planner's Filter refuses a pod where it asks for more
	// than a node has left; only then may a probe be cut by resources (see room).
	ResourcesFiltered() bool
}

// Outcome is what removing a set of candidates would take: new NodeClaims for the pods that fit
// nowhere else (none when the others hold them all), or why it cannot be done.
type Outcome struct {
	Replacements []*planner.PlannedClaim
	// Unplaceable says why some pod would fit nowhere; the removal is then off.
	Unplaceable string
}

// OK reports whether every pod found a place.
func (o *Outcome) OK() bool { return o.Unplaceable == "" }

// prober answers, for one pass over one State, what removing a set of candidates would take. The
// cluster the planner sees is built once, on the first probe (a pass that ends at emptiness
// needs none), as a simulation.Snapshot; each probe is a fork of it, reverted afterwards.
type prober struct {
	state   *State
	planner Planner
	// rebuild builds the planner's cluster afresh for every probe and never cuts a probe short,
	// as the loop did before it kept one snapshot per pass: the reference that tests and
	// benchmarks compare the snapshot with.
	rebuild bool
	// pass is built by the first probe.
	pass *passCluster
	// nodes are the State's nodes by name, once a probe needs them.
	nodes map[string]*corev1.Node
}

// passCluster is what every probe of a pass shares.
type passCluster struct {
	view     *planner.View
	pools    []planner.Pool
	snapshot *simulation.Snapshot
	// err is why the snapshot could not be built; every probe then answers with it.
	err error
	// topology are the view's pods that declare topology spread or pod (anti-)affinity: all the
	// planner reads of the cluster's pods besides the snapshot.
	topology []*corev1.Pod
	// waiting are the pods that wait unplaced: every probe lets them take their pick first.
	waiting []*corev1.Pod
	room    *room
}

func newProber(s *State, pl Planner) *prober { return &prober{state: s, planner: pl} }

// simulate is one probe with no pass around it (the validation before acting).
func simulate(ctx context.Context, pl Planner, s *State, removed []*Candidate) *Outcome {
	return newProber(s, pl).simulate(ctx, removed)
}

func (p *prober) cluster() *passCluster {
	if p.pass != nil {
		return p.pass
	}
	view := p.state.cluster().View(p.state.TypesByPool)
	// Every probe plans with the same pools: their offerings are worked out once.
	pc := &passCluster{view: view, pools: p.state.preparedPools(), waiting: waitingOf(p.state.Pods, view)}
	pc.snapshot, pc.err = simulation.NewSnapshot(view.Pods, view.Nodes)
	for _, pod := range view.Pods {
		if declaresTopology(pod) {
			pc.topology = append(pc.topology, pod)
		}
	}
	if pc.err == nil && p.planner.ResourcesFiltered() {
		pc.room = newRoom(pc.snapshot, view, pc.pools)
	}
	p.pass = pc
	return pc
}

// simulate asks the planner where the candidates' pods would go if the candidates were gone:
// onto the other nodes, or onto new NodeClaims from the NodePools. It is the very plan the
// provisioner would make if those nodes were tainted now.
//
// The candidates stay in the cluster as ghosts: the same labels but no hostname, a
// karpenter.sh/disrupted taint, no room and no pods. Topology spread keeps counting their zones
// as domains (as it will once the new node is up there or elsewhere), but not their hostnames,
// which really do go away; and no pod can be placed on them, whatever it tolerates.
func (p *prober) simulate(ctx context.Context, removed []*Candidate) *Outcome {
	if p.rebuild {
		return p.simulateRebuilt(ctx, removed)
	}
	pc := p.cluster()
	if pc.err != nil {
		return &Outcome{Unplaceable: pc.err.Error()}
	}
	pending := p.inTurns(removed, pendingOf(removed, pc.view))
	if len(pending) == 0 {
		return &Outcome{}
	}
	gone := nodeSet(removed)
	pc.snapshot.Fork()
	defer pc.snapshot.Revert()
	for _, c := range removed {
		if err := pc.snapshot.Replace(ghost(c.Node)); err != nil {
			return &Outcome{Unplaceable: err.Error()}
		}
	}
	in := planner.Input{Pending: pending, InFlight: pc.view.InFlight, Unsettled: pc.view.Unsettled, Pools: pc.pools, DaemonSets: p.state.DaemonSets,
		Snapshot: pc.snapshot}
	for _, pod := range pc.topology {
		if !gone[pod.Spec.NodeName] {
			in.Pods = append(in.Pods, pod)
		}
	}
	return planWithWaiting(ctx, p.planner, in, pc.waiting)
}

// hopeless reports whether removing cands cannot work by resources alone (see room). It cuts
// nothing on the rebuilt path, which is what the loop did before.
func (p *prober) hopeless(cands []*Candidate, price float64, spot bool) bool {
	if p.rebuild {
		return false
	}
	pc := p.cluster()
	return pc.room != nil && pc.room.hopeless(cands, price, spot)
}

// simulateRebuilt is simulate with the cluster built from the State for this probe alone.
func (p *prober) simulateRebuilt(ctx context.Context, removed []*Candidate) *Outcome {
	gone := nodeSet(removed)
	view := p.state.cluster().View(p.state.TypesByPool)
	in := planner.Input{InFlight: view.InFlight, Unsettled: view.Unsettled, Pools: p.state.pools(), DaemonSets: p.state.DaemonSets}
	for _, n := range view.Nodes {
		if gone[n.Name] {
			in.Nodes = append(in.Nodes, ghost(n))
			continue
		}
		in.Nodes = append(in.Nodes, n)
	}
	for _, pod := range view.Pods {
		if !gone[pod.Spec.NodeName] {
			in.Pods = append(in.Pods, pod)
		}
	}
	in.Pending = p.inTurns(removed, pendingOf(removed, view))
	if len(in.Pending) == 0 {
		return &Outcome{}
	}
	return planWithWaiting(ctx, p.planner, in, waitingOf(p.state.Pods, view))
}

// inTurns holds the pods that the drain will evict in turns to where their siblings are (see
// followers.go).
func (p *prober) inTurns(removed []*Candidate, pending []*corev1.Pod) []*corev1.Pod {
	if len(p.state.PDBs) == 0 {
		return pending
	}
	if p.nodes == nil {
		p.nodes = make(map[string]*corev1.Node, len(p.state.Nodes))
		for _, n := range p.state.Nodes {
			p.nodes[n.Name] = n
		}
	}
	leaving := map[types.UID]bool{}
	for _, c := range removed {
		for _, pod := range c.Pods {
			leaving[pod.UID] = true
		}
	}
	return heldToSiblings(pending, leaving, p.state.Pods, p.nodes, p.state.PDBs)
}

// pendingOf are the pods a removal must place: the candidates' own, and those of nodes that are
// already leaving, which need room too (a plan that took it from them would strand them).
func pendingOf(removed []*Candidate, view *planner.View) []*corev1.Pod {
	var pending []*corev1.Pod
	for _, c := range removed {
		for _, p := range c.Pods {
			pending = append(pending, scheduling.Unbound(p))
		}
	}
	return append(pending, view.Reschedulable...)
}

// outcomeOf reads a probe's plan. Only the pods the removal moves count: waiting pods that fit
// nowhere, or only on capacity in flight, do not stop it, and a claim that holds nothing but
// waiting pods is the provisioner's to make once the removal has freed the room, not a
// replacement.
func outcomeOf(plan *planner.Plan, waiting map[types.UID]bool) *Outcome {
	for _, u := range plan.Unplaceable {
		if waiting[u.Pod.UID] {
			continue
		}
		var reasons []string
		for pool, why := range u.Reasons {
			if pool != "" {
				why = pool + ": " + why
			}
			reasons = append(reasons, why)
		}
		sort.Strings(reasons)
		return &Outcome{Unplaceable: fmt.Sprintf("pod %s/%s would fit nowhere (%s)", u.Pod.Namespace, u.Pod.Name, strings.Join(reasons, "; "))}
	}
	for _, pods := range plan.InFlight {
		if !onlyWaiting(pods, waiting) {
			// Capacity in flight may still fail to launch; a removal must not depend on it.
			return &Outcome{Unplaceable: "some pods would go to capacity that is still launching"}
		}
	}
	out := &Outcome{}
	for _, c := range plan.Claims {
		if !onlyWaiting(c.Pods, waiting) {
			out.Replacements = append(out.Replacements, c)
		}
	}
	return out
}

func onlyWaiting(pods []*corev1.Pod, waiting map[types.UID]bool) bool {
	for _, p := range pods {
		if !waiting[p.UID] {
			return false
		}
	}
	return true
}

func nodeSet(cands []*Candidate) map[string]bool {
	out := make(map[string]bool, len(cands))
	for _, c := range cands {
		out[c.Node.Name] = true
	}
	return out
}

// declaresTopology reports whether the pod has topology spread constraints or pod (anti-)affinity.
func declaresTopology(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	return len(p.Spec.TopologySpreadConstraints) > 0 || (a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil))
}

// ghost is the node as a removed candidate: see simulate.
func ghost(n *corev1.Node) *corev1.Node {
	g := n.DeepCopy()
	delete(g.Labels, corev1.LabelHostname)
	g.Spec.Taints = append(g.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
	zero := resource.MustParse("0")
	g.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: zero, corev1.ResourceMemory: zero, corev1.ResourcePods: zero}
	return g
}
