package planner

import (
	"context"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/daemons"
	"github.com/tailor-sh/tailor/pkg/provision/planner/memo"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/provision/planner/packing"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/provision/planner/prefilter"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Input is everything one plan looks at.
type Input struct {
	// Pending are the pods to place.
	Pending []*corev1.Pod
	// Nodes and Pods are the cluster as the scheduler sees it: every node, including the
	// in-flight ones below, and every pod bound or planned onto them.
	Nodes []*corev1.Node
	Pods  []*corev1.Pod
	// InFlight maps the name of a node in Nodes to the NodeClaim it stands for, for nodes that
	// are launching or not yet initialized. Pods that fit there need no new capacity; a pod
	// with preferences, or one that spreads, weighs them as it weighs the claims a plan opens.
	InFlight map[string]string
	// Unsettled maps nodes of InFlight to the label keys their claim has not settled yet
	// (View.Unsettled): a pod that reads one of them as a topology key is not placed there, as
	// it would be counted in no domain of the key until the claim launches.
	Unsettled map[string][]string
	// Spared are the pods, pending or counted in Pods on a node they are not bound to, held to a
	// node in flight that an earlier plan launched for them (HeldFor, which LaunchHold bounds).
	// The claims a plan opens must not make the scheduler refuse them there
	// (sparingTheLaunching).
	Spared map[types.UID]bool
	// Pools are the NodePools to launch from, highest weight first.
	Pools []Pool
	// DaemonSets are the pods DaemonSets would run on a new node (see DaemonSetPods); each new
	// node's room is what its daemons leave.
	DaemonSets []*corev1.Pod
	// Destined maps pending pods to the node in Nodes they are on their way to (nominated there,
	// or planned onto its NodeClaim by an earlier plan). They are placed first, and there first when they
	// still fit: a plan that packed them anew would send the scheduler other ways than the
	// nominations it already follows, and the pods caught between would need new capacity.
	Destined map[types.UID]string
	// First are pods of Pending placed before the others (after the destined ones), whatever
	// their size: a removal's probe lets the pods that wait unplaced take their pick of the room
	// it frees before the pods it evicts, as the scheduler may give it to them.
	First map[types.UID]bool
	// Unexplained are pods of Pending whose reasons the caller does not read should no pool
	// hold them (a disruption probe's waiting pods): they are recorded Unplaceable with a short
	// reason, without each offering weighed on its own for the plugins' words.
	Unexplained map[types.UID]bool
	// StopAtUnplaceable is for a caller that reads of a plan only whether every pod outside
	// First is placed, and why the first that is not was refused (a disruption probe): planning
	// stops there, and the plan holds what was decided until then, that pod last among its
	// Unplaceable. Most probes that fail would otherwise go on planning, and explaining, the rest
	// of the evicted pods.
	StopAtUnplaceable bool
	// Snapshot, when set, is Nodes and Pods already built (simulation.NewSnapshot), for a caller
	// that plans many times over one cluster and changes it only in forks: the plan then reads
	// its nodes and pods from it, and Pods only for the topology terms they declare. The plan
	// leaves it as it found it.
	Snapshot *simulation.Snapshot
}

// Plan is what the planner decided.
type Plan struct {
	// Claims are the NodeClaims to create.
	Claims []*nodeclaim.Planned
	// InFlight maps NodeClaim names to the pending pods that will go to them.
	InFlight map[string][]*corev1.Pod
	// FitsExisting are pods that fit a node that is ready now; the scheduler will place them.
	// FitsExistingOn says which node the plan counted each of them on.
	FitsExisting   []*corev1.Pod
	FitsExistingOn map[types.UID]string
	// Unplaceable are pods no NodePool can hold, with the reason per NodePool.
	Unplaceable []Unplaceable
	// Waiting are pods the scheduler would not try yet, so the plan does not either: a
	// PreEnqueue plugin holds them (their ResourceClaim is not created yet), and it lets them go
	// once what they wait for is there, when they are planned like any other.
	Waiting []Unplaceable
}

// Unplaceable is a pod that fits nowhere, with a reason per NodePool (or one overall reason when
// no NodePool was consulted).
type Unplaceable struct {
	Pod     *corev1.Pod
	Reasons map[string]string
}

// Planner turns pending pods into NodeClaims. Fit is decided by the simulator's Filter plugins.
type Planner struct {
	sim *simulation.Simulator
	// daemons are the current plan's DaemonSet pods; a Planner runs one plan at a time.
	daemons *daemons.Set
	// requests are the current plan's pending pods' requests, computed once; least the least
	// NodeResourcesFit may count of each pod first fit weighs (simulation.MinRequests).
	requests map[*corev1.Pod]corev1.ResourceList
	least    map[*corev1.Pod]simulation.Requests
	// backed are the extended resources the current plan's pending pods ask for that DRA devices
	// back (nodepool.DeviceBacked).
	backed map[corev1.ResourceName]bool
	// minValues is the policy for requirements with minValues (see minvalues.go).
	minValues MinValuesPolicy
	// scratch are the nodes the planner writes a view of a claim into before each Filter
	// question, one per kind of question, so that the questions allocate no node. Filter plugins
	// do not keep the nodes they are shown.
	scratch struct{ capacity, placement, cover framework.NodeInfo }
	// reused is how many PreFilter states the last plan brought up to date rather than made
	// anew; tests read it to know that a case exercises the kept states.
	reused int
	// derived is how many the last plan made from a sibling spec's state (prefilter/like.go).
	derived int
}

// requestsOf returns the pod's requests, from the current plan's cache when it is pending.
func (pl *Planner) requestsOf(pod *corev1.Pod) corev1.ResourceList {
	if r, ok := pl.requests[pod]; ok {
		return r
	}
	return scheduling.PodRequests(pod)
}

// leastOf returns simulation.MinRequests of the pod, kept for the current plan.
func (pl *Planner) leastOf(pod *corev1.Pod) simulation.Requests {
	r, ok := pl.least[pod]
	if !ok {
		r = simulation.MinRequests(pod)
		if pl.least != nil {
			pl.least[pod] = r
		}
	}
	return r
}

// ResourcesFiltered reports whether the planner's Filter runs NodeResourcesFit, so that a pod
// asking for more than a node has left is never placed there.
func (pl *Planner) ResourcesFiltered() bool { return pl.sim.ResourcesFiltered() }

// NewPlanner returns a planner over sim.
func NewPlanner(sim *simulation.Simulator) *Planner { return &Planner{sim: sim} }

// Plan places in.Pending: first on nodes that exist or are in flight, then on claims opened by
// this plan, then on new claims from the pools in order. A pod with preferences, or one that
// spreads, goes to ready nodes first, and then weighs nodes in flight beside the claims of the
// plan, strictest shape of itself first. The pods go one at a time (planning.place), in packing
// order, the destined ones first; finish then checks the plan as a whole as the scheduler will
// see it.
func (pl *Planner) Plan(ctx context.Context, in Input) *Plan { return pl.plan(ctx, in, false) }

// plan is Plan; fresh asks every question afresh: PreFilter for every pod instead of keeping
// states (prefilter.States, beside), and Filter on every claim, where a domain that refused a
// pod would answer for its other claims (see byDomain). The two must plan alike, which tests
// check; only Plan, which keeps them, is for use.
func (pl *Planner) plan(ctx context.Context, in Input, fresh bool) *Plan {
	p, err := pl.newPlanning(ctx, in, fresh)
	if err != nil {
		plan := &Plan{InFlight: map[string][]*corev1.Pod{}, FitsExistingOn: map[types.UID]string{}}
		for _, pod := range in.Pending {
			plan.Unplaceable = append(plan.Unplaceable, Unplaceable{Pod: pod, Reasons: map[string]string{"": err.Error()}})
		}
		return plan
	}
	// The plan counts its pods on the snapshot's nodes as it goes; the fork it made leaves the
	// caller's snapshot as it was.
	defer p.snapshot.Revert()
	for _, pod := range packing.DestinedFirst(packing.FirstOf(packing.Order(in.Pending, p.ratio, pl.requestsOf), in.First), in.Destined) {
		p.place(ctx, pod)
		if u := p.plan.Unplaceable; in.StopAtUnplaceable && len(u) > 0 && u[len(u)-1].Pod == pod && !in.First[pod.UID] {
			pl.reused, pl.derived = p.pf.Reused, p.pf.Derived
			return p.plan
		}
	}
	pl.reused, pl.derived = p.pf.Reused, p.pf.Derived
	p.launching = append(p.launching, countedInFlight(p.nodeInfos, in.InFlight, in.Spared)...)
	p.finish(ctx)
	return p.plan
}

// planning is one call of Plan in progress: what it reads (the input, the snapshot it counts pods
// on, the pools and the empty domains) and what it has decided so far (the plan, the claims it
// opened, what PreFilter and Filter answered). It lives as long as the call.
type planning struct {
	pl *Planner
	in Input
	// fresh asks every question afresh (see Planner.plan).
	fresh    bool
	snapshot *simulation.Snapshot
	// nodeInfos are the snapshot's nodes, listed by name: first fit goes in that order, so that
	// a plan is the same for the same input. ready are those not in flight, launchingNodes the
	// others.
	nodeInfos             []fwk.NodeInfo
	ready, launchingNodes []fwk.NodeInfo
	unsettled             *clusterview.OpenKeys
	pools                 []*nodepool.State
	ratio                 float64
	plan                  *Plan
	defaultKeys           []string
	rel                   *podkeys.Relevance
	domains               []fwk.NodeInfo
	open                  []*openClaim
	rooms                 claimRooms
	kinds                 kindIDs
	memo                  *memo.Rejections[*openClaim]
	specs                 map[*corev1.Pod]string
	pf                    *prefilter.States
	// planned are the nodes of the claims this plan opened, as PreFilter is shown them beside
	// the snapshot's, in the order of open: a claim's is appended as it opens (refilling it for
	// each pod was a copy of every claim per pod). The simulator keeps the slice it is shown, so
	// nothing is ever written into planned's spare capacity but the next claim, which no slice
	// shown reaches. plannedDomains is planned and then domains, for the views that weigh the
	// empty domains, built anew once a claim has opened since.
	planned        []fwk.NodeInfo
	plannedDomains []fwk.NodeInfo
	// launching are the pods this plan leaves to capacity in flight: the claims it opens must
	// not break them.
	launching []onItsNode
	// devices keeps the DRA overlay in step with the plan (devices.go); nil when no pending pod
	// asks for devices.
	devices *devicePlan
}

// newPlanning forks the snapshot (in.Snapshot, or one built from in.Nodes and in.Pods) and
// prepares what every pod's placement reads: the pools rated for the pending pods, the
// DaemonSet pods, the empty domains and the relevance of label keys.
func (pl *Planner) newPlanning(ctx context.Context, in Input, fresh bool) (*planning, error) {
	snapshot := in.Snapshot
	if snapshot == nil {
		var err error
		if snapshot, err = simulation.NewSnapshot(in.Pods, in.Nodes); err != nil {
			return nil, err
		}
	}
	snapshot.Fork()
	pl.backed = nodepool.DeviceBacked(pl.sim.DRA(), in.Pending)
	in.Pools = nodepool.WithoutBacked(in.Pools, pl.backed)
	p := &planning{pl: pl, in: in, fresh: fresh, snapshot: snapshot, unsettled: clusterview.NewOpenKeys(in.Unsettled), kinds: kindIDs{}, memo: memo.New[*openClaim](),
		plan: &Plan{InFlight: map[string][]*corev1.Pod{}, FitsExistingOn: map[types.UID]string{}}}
	p.nodeInfos, _ = snapshot.NodeInfos().List()
	// Without capacity in flight every node is ready: the snapshot's own list, read only, serves
	// as both, so that a plan over a large fleet copies nothing per node.
	p.ready = p.nodeInfos
	if len(in.InFlight) > 0 {
		p.ready = nil
		for _, ni := range p.nodeInfos {
			if _, ok := in.InFlight[ni.Node().Name]; ok {
				p.launchingNodes = append(p.launchingNodes, ni)
			} else {
				p.ready = append(p.ready, ni)
			}
		}
	}
	p.pools = pl.ratePools(in)
	if len(p.pools) > 0 {
		p.ratio = p.pools[0].Ratio
	}
	p.devices = newDevicePlan(p)
	pl.sim.Use(snapshot)
	p.holdCounted(ctx)
	pl.daemons = daemons.Prepare(ctx, pl.sim, in.DaemonSets)
	pl.daemons.ReserveInFlight(ctx, snapshot, p.nodeInfos, in.InFlight)
	var selectorKeys []string
	selectorKeys, p.defaultKeys = pl.sim.ProfileNodeKeys()
	p.rel = podkeys.New(selectorKeys, p.defaultKeys, in.Pending, in.Pods, in.DaemonSets)
	if p.devices != nil {
		p.rel.DeviceKeys = p.pl.sim.DRA().NodeLabelKeys()
		p.rel.NeedsDevices = p.pl.needsDevices
	}
	p.domains = nodepool.EmptyDomains(p.pools, podkeys.ReadBySpreaders(in.Pending, p.rel, p.defaultKeys))
	p.planned = make([]fwk.NodeInfo, 0, len(in.Pending)+len(p.domains))
	p.specs = make(map[*corev1.Pod]string, len(in.Pending))
	for _, pod := range in.Pending {
		p.specs[pod] = podkeys.SpecKey(pod)
	}
	p.pf = prefilter.New(pl.sim, fresh, slices.Collect(maps.Values(p.specs)))
	return p, nil
}

// node is the snapshot's node of that name, or nil. The snapshot keeps them by name: a plan
// makes no map of its own, which on a fleet of thousands cost more than its placements.
func (p *planning) node(name string) fwk.NodeInfo {
	if name == "" {
		return nil
	}
	ni, err := p.snapshot.NodeInfos().Get(name)
	if err != nil {
		return nil
	}
	return ni
}

// ratePools caches the pending pods' requests and returns the pools in order, each rated for how
// efficiently its instance types hold the batch's mix of cpu and memory.
func (pl *Planner) ratePools(in Input) []*nodepool.State {
	var cpu, mem, maxCPU, maxMem float64
	pl.requests = make(map[*corev1.Pod]corev1.ResourceList, len(in.Pending))
	pl.least = make(map[*corev1.Pod]simulation.Requests, len(in.Pending))
	for _, p := range in.Pending {
		r := scheduling.PodRequests(p)
		pl.requests[p] = r
		c, m := float64(r.Cpu().MilliValue()), r.Memory().AsApproximateFloat64()
		cpu, mem, maxCPU, maxMem = cpu+c, mem+m, max(maxCPU, c), max(maxMem, m)
	}
	pools := make([]*nodepool.State, 0, len(in.Pools))
	for _, p := range in.Pools {
		ps := nodepool.NewState(p)
		ps.Rank = len(pools)
		ps.RateEfficiency(cpu, mem, maxCPU, maxMem)
		pools = append(pools, ps)
	}
	return pools
}

// templateInfo is the node the candidate would register as, named name and labelled with choice,
// with the DaemonSet pods it would run already on it.
func (pl *Planner) templateInfo(ctx context.Context, c *nodepool.Candidate, name string, choice nodepool.LabelChoice) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(c.TemplateNode(name, choice))
	if pl.daemons != nil {
		for _, p := range pl.daemons.On(ctx, c) {
			ni.AddPod(clusterview.OnNode(p, name))
		}
	}
	return ni
}

// UIDs returns the pods' UIDs as a set.
func UIDs(pods []*corev1.Pod) map[types.UID]bool {
	out := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		out[p.UID] = true
	}
	return out
}

// Ungrounded returns the pods the view counts where an earlier plan or a nomination headed them
// whose required pod affinity the scheduler would now refuse there (see clusterview.Ungrounded).
func (pl *Planner) Ungrounded(ctx context.Context, v *clusterview.View) []*corev1.Pod {
	return clusterview.Ungrounded(ctx, pl.sim, v)
}

// Kind sums up why the pod could not be placed, for metrics: one word, from the reason that
// applies to the most NodePools.
func (u Unplaceable) Kind() string {
	votes := map[string]int{}
	for _, why := range u.Reasons {
		switch {
		case strings.Contains(why, "limit on"):
			votes["limits"]++
		case strings.Contains(why, "untolerated taint"):
			votes["taint"]++
		case strings.Contains(why, "requirement keys with no compatible offering"), strings.Contains(why, "satisfies the NodePool's requirements"):
			votes["requirements"]++
		case strings.Contains(why, "the devices of no instance type satisfy"):
			votes["devices"]++
		case strings.Contains(why, "Insufficient"), strings.Contains(why, "Too many pods"):
			votes["resources"]++
		case strings.Contains(why, "no NodePool"):
			votes["no_nodepool"]++
		default:
			votes["other"]++
		}
	}
	best, n := "other", 0
	for k, v := range votes {
		if v > n || (v == n && k < best) {
			best, n = k, v
		}
	}
	return best
}
