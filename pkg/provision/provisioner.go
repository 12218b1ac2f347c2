// Package provision turns pods that fit no node into NodeClaims: a batcher gathers them, the
// planner places them with the scheduler's Filter plugins, and the provisioner writes the result.
package provision

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/controller"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// createWorkers bounds the NodeClaim creates of one plan in flight at once: enough that a burst's
// claims go in one round trip (a second wave costs a round trip to an API server the burst loads),
// as many as the lifecycle controller launches at once (DefaultNodeClaimWorkers). Karpenter
// creates every claim of a plan at once; the client's rate limit is then the bound. At 32, a
// 4,000-pod scale-up's pods waited a p90 of 61-77 s for their NodeClaim, the longest step, with
// each create answered in 1.0-2.1 s by an API server loaded by the burst.
const createWorkers = 100

// batcher gathers the reasons to plan into batches (batch.Batcher). It is an interface so that
// the tests can see which of Trigger and Nudge an event asks for.
type batcher interface {
	Trigger()
	Nudge()
	Soon()
	Wait(ctx context.Context) bool
}

// Provisioner owns the pending pods handed over by the scheduler and the plans made for them.
// Its methods called from the scheduling goroutine touch memory only.
type Provisioner struct {
	opts    Options
	batcher batcher
	// shortSince is when each gang that a plan left out for being short of its minCount was
	// first found so; reconcile's own (giveBackShortGangs).
	shortSince map[planner.Gang]time.Time

	mu sync.Mutex
	// enqueued are pods the PostFilter handed over since they last bound.
	enqueued map[types.UID]bool
	// planned maps pods to the NodeClaim a plan put them on, until that NodeClaim is initialized:
	// from then on the scheduler sees the node itself.
	planned map[types.UID]string
	// assumed maps pods the scheduler reserved, and has not yet bound, to their node: the
	// informers do not show them on it yet, but the room is taken.
	assumed map[types.UID]string
	// waiters are PlanNow calls waiting for the next planning pass to finish.
	waiters []chan error
	// closed are nodes the disruption loop is removing: Reserve refuses them (see Close);
	// refused are the pods it refused, by node, to be activated when the node reopens.
	closed  map[string]bool
	refused map[string]map[string]*corev1.Pod
	// written numbers each write to planned and assumed, and seq is the last number given: an
	// entry written after the informers were listed is not forgotten for missing from the list.
	written map[types.UID]uint64
	seq     uint64
	// awaitedNodes maps existing nodes a plan left pending pods to (they fit there, and the
	// scheduler will bind them) to when that stops mattering, as awaited does for claims.
	awaitedNodes map[string]time.Time
	// awaited maps NodeClaims that pods were planned onto to when that stops mattering: until
	// NominationWindow after the plan, or after the claim initialized with pods still on their way
	// (the scheduler binds them only once its backoff lets it look again). A node that is
	// awaited looks empty, and must not be taken for empty.
	awaited map[string]time.Time
	// nominations are the nominations this process wrote, by pod; nominating and nominateAgain
	// run them one pass at a time (see nominateSoon).
	nominations map[types.UID]string
	// admitted are the nominations the last pass found the scheduler will honour, by pod: the
	// only ones PostFilter hands the scheduler (see NominatedNode).
	admitted      map[types.UID]string
	nominating    bool
	nominateAgain bool
	// runCtx is Run's context, for nominations started by Launched.
	runCtx context.Context
	// created are NodeClaims this process created that the informer has not shown yet, with when:
	// the plan right after the one that created them must count them, or it plans their pods
	// again and launches their capacity twice.
	created map[string]createdClaim
	// unsure are the creates whose answer was lost, and what listing the API server found of them
	// (see unsure.go).
	unsure unsureCreates
	// checker is the simulator nominations and stranded pods are weighed with, as the scheduler
	// weighs them (see schedulerview.View); the planner owns another, so the two never wait on each other.
	checker *simulation.Simulator
	// checking serialises the questions asked of checker.
	checking sync.Mutex
	// headed maps pending pods to the node a plan put them on, once its name is known, and since
	// when; stranded are the pods found still pending strandedAfter after that node came up.
	headed   map[types.UID]heading
	stranded map[types.UID]bool
	// askedAt is when the stranded watch last asked the Filter plugins about stranded pods (see
	// checkStranded); the watch's own.
	askedAt time.Time
	// podKeys are the namespace/name of the pods in planned or headed, so that the pods of one
	// claim or node are found without listing every pod (see activatePending).
	podKeys map[types.UID]string
	// launchedHere are the NodeClaims this process created for pods, with when; landed counts, by
	// node, the pods the scheduler has reserved there and not unreserved; unused the claims
	// already reported as unused.
	launchedHere map[string]time.Time
	landed       map[string]int
	unused       map[string]bool
	// wantedAt is when a pending pod was last on its way to a claim launched here, and givenBack
	// the claims deleted because none was for GiveBackAfter (see giveback.go).
	wantedAt  map[string]time.Time
	givenBack map[string]bool
	// gangReleased are the claims that held the pods of a gang given back (giveBackShortGangs),
	// with the gang and when: they go together at the next pass (see giveback.go).
	gangReleased map[string]releasedForGang
	// refusals are, by pending pod, the nodes launched for it and those the scheduler refused
	// it on (see refusals.go).
	refusals map[types.UID]*refusals
	// woken are the pods wake moved into the active queue, with the node they were headed for.
	woken map[types.UID]string
	// holdLapsed are the launching claims whose hold on their pods has lapsed (see lapsedHolds).
	holdLapsed map[string]bool
	// gated are the pods the scheduler's PreEnqueue gate kept out of its queue while they were
	// held (see Gate), until a round finds their hold ended and lets them in.
	gated map[types.UID]bool
	// keptBy are what the pending pods of the plans take on a node, and kept the room they keep
	// as KeptRoom last found it.
	keptBy map[types.UID]keptPod
	kept   *keptIndex
	// destined maps pods on their way to a node a plan put them on, once that node exists, to
	// it and until when: the plugin's Score prefers it (see PlannedNode).
	destined map[types.UID]destination
	// needing are the pending pods known to need capacity (quiet.go); forced asks the next round
	// to read the cluster whatever the quiet test says.
	needing map[types.UID]need
	forced  bool
	// swept is when quiet last looked through the pods for refusals (sweep); reconcile's own.
	swept time.Time
	// settledAt is when quiet last listed the nodes and NodeClaims and found none leaving or
	// launching (see settled); reconcile's own.
	settledAt time.Time
	// lookedAt is when a round last read the cluster (see quiet); reconcile's own.
	lookedAt time.Time
	// reserved holds what Reserve took from a pod's plan until the pod binds or is unreserved.
	reserved map[types.UID]reservedPlan
	// told maps pending pods to the NodePools they were told cannot launch, with the cause, so
	// each is told once (see tellUnavailable).
	told map[types.UID]map[string]string
}

// NominationWindow is how long after a plan, or after its claim initialized, a NodeClaim counts
// as awaited by pods: longer than the scheduler's default maximum backoff (10 s), so the pods
// have bound by then.
const NominationWindow = 20 * time.Second

// IsProvisionable reports whether pod may need capacity: one of ours, unbound, not being deleted
// and not held back by scheduling gates. Such a pod is planned once it is known to need capacity
// (the scheduler handed it over, or marked it Unschedulable), or when it belongs to a burst that
// already does (needed.go): the planner places a pod on an existing node first when it fits there
// (and then leaves it to the scheduler), so asking early launches nothing the scheduler would not
// have asked for, and a burst is planned in one batch instead of in as many as the scheduler's
// queue takes to go through it. Pods that fit the nodes there are are the scheduler's alone, and
// cost Tailor nothing (quiet.go): planning them beside it cost the scheduler throughput benchmark
// a plan of all 5,000 queued pods at start, about 7% of the CPU of Tailor's turn.
func (p *Provisioner) IsProvisionable(pod *corev1.Pod) bool {
	return pod.Spec.SchedulerName == p.opts.SchedulerName && pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil &&
		len(pod.Spec.SchedulingGates) == 0
}

// Run plans after every batch until ctx ends. checker is a simulator of the scheduler's profile
// other than the planner's, for questions asked beside planning (see schedulerview.View).
func (p *Provisioner) Run(ctx context.Context, pl *planner.Planner, checker *simulation.Simulator) {
	logger := klog.FromContext(ctx).WithName("provisioner")
	ctx = klog.NewContext(ctx, logger)
	p.mu.Lock()
	p.runCtx = ctx
	p.checker = checker
	p.mu.Unlock()
	// Pods that were pending before this process started get no PostFilter call until their
	// backoff ends; look at them at once. Later, look again now and then: pods that could not be
	// placed may fit once an offering is available again or a limit frees up, and no event says so.
	p.batcher.Nudge()
	go p.watchStranded(ctx)
	go controller.Every(ctx, p.opts.Clock, ResyncInterval, p.batcher.Nudge)
	for p.batcher.Wait(ctx) {
		waiters := p.takeWaiters()
		var err error
		if len(waiters) > 0 || !p.quiet() {
			err = p.reconcile(ctx, pl)
		} else {
			metrics.ProvisionerRounds.WithLabelValues("quiet").Inc()
		}
		answer(waiters, err)
		if err != nil {
			logger.Error(err, "Provisioning failed; retrying")
			go func() {
				select {
				case <-p.opts.Clock.After(time.Second):
					p.batcher.Nudge()
				case <-ctx.Done():
				}
			}()
		}
	}
}

// reconcile is one round of provisioning, in the order of its steps: read the cluster, view it as
// the scheduler does, gather the pods that wait for capacity, plan them, record what the plan
// decided, launch its NodeClaims, and report to the pods it could not place. Only launch and the
// reports write to the API server; a round that finds nothing pending writes nothing but what
// earlier rounds left to say.
func (p *Provisioner) reconcile(ctx context.Context, pl *planner.Planner) error {
	start := p.opts.Clock.Now()
	p.lookedAt = start
	r, err := p.readCluster(ctx)
	if err != nil {
		return err
	}
	view, enqueued := p.viewOf(ctx, pl, r)
	pending, unbound := p.pendingPods(ctx, r, view, enqueued)
	// Last, once this round's plan is recorded: a pod it moved off a hold is let in then, and
	// a pod it held again stays out.
	defer p.letInUngated(r.pods)
	if len(pending) == 0 {
		metrics.ProvisionerRounds.WithLabelValues("idle").Inc()
		p.tellUnavailable(nil, nil, unbound)
		p.nominateSoon(ctx)
		return nil
	}
	metrics.ProvisionerRounds.WithLabelValues("planned").Inc()
	planStart := p.opts.Clock.Now()
	plan, err := p.plan(ctx, pl, view, r.pools, pending)
	if err != nil {
		return err
	}
	planned := p.opts.Clock.Since(planStart)
	p.record(pending, plan)
	createStart := p.opts.Clock.Now()
	errs := p.launch(ctx, plan, view)
	creating := p.opts.Clock.Since(createStart)
	p.report(ctx, plan, r.unavailable, unbound)
	klog.FromContext(ctx).V(2).Info("Planned", "pending", len(pending), "newClaims", len(plan.Claims), "toInFlight", len(plan.InFlight),
		"fitExisting", len(plan.FitsExisting), "unplaceable", len(plan.Unplaceable), "duration", p.opts.Clock.Since(start),
		"planning", planned, "creating", creating)
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// reading is what one round read from the listers and the cloud.
type reading struct {
	// listed is the ledger's count of creates when the round began (see listed).
	listed uint64
	nodes  []*corev1.Node
	pods   []*corev1.Pod
	// claims are the listed NodeClaims and those this process created that the lister lacks yet.
	claims []*karpv1.NodeClaim
	// pools are the NodePools that can launch, with their instance types and usage.
	pools       []planner.Pool
	typesByPool map[string][]*cloud.InstanceType
	// unavailable are the NodePools left out of the plan, and why.
	unavailable []unavailablePool
}

// readCluster lists nodes, pods, NodeClaims and the NodePools able to launch, with what each pool
// already holds, so that a plan never takes a pool over its limits.
func (p *Provisioner) readCluster(ctx context.Context) (*reading, error) {
	r := &reading{listed: p.listed()}
	var err error
	if r.nodes, err = p.opts.Nodes.List(labels.Everything()); err != nil {
		return nil, err
	}
	if r.pods, err = p.opts.Pods.List(labels.Everything()); err != nil {
		return nil, err
	}
	if r.claims, err = p.claimsToPlanFrom(ctx); err != nil {
		return nil, err
	}
	if r.pools, r.typesByPool, r.unavailable, err = p.pools(ctx); err != nil {
		return nil, err
	}
	usage := planner.PoolUsage(r.claims, r.typesByPool)
	for i := range r.pools {
		r.pools[i].Used = usage[r.pools[i].NodePool.Name]
	}
	return r, nil
}

// viewOf is the cluster as the scheduler will see it once what this process has planned lands,
// with the pods handed over to it since the last round (enqueued). A pod a plan sent where the
// scheduler would now refuse it is counted nowhere, and planned again.
func (p *Provisioner) viewOf(ctx context.Context, pl *planner.Planner, r *reading) (*planner.View, map[types.UID]bool) {
	cluster, enqueued := p.forgetStale(r.nodes, r.pods, r.claims, r.listed)
	view := cluster.View(r.typesByPool)
	if loose := pl.Ungrounded(ctx, view); len(loose) > 0 {
		view.Uncount(loose)
		p.forgetHeadings(ctx, loose)
		klog.FromContext(ctx).V(2).Info("Planning again pods the scheduler would now refuse where a plan sent them", "pods", len(loose))
	}
	return view, enqueued
}

// pendingPods are the pods of this scheduler that wait for capacity: unbound, counted nowhere in
// the view, not on their way to a node preemption freed, not held back by the refusal backoff,
// and known to need capacity; and the pods of leaving nodes, planned before they are evicted. It
// also returns every unbound pod, whose refusals and reports are kept while they wait.
func (p *Provisioner) pendingPods(ctx context.Context, r *reading, view *planner.View, enqueued map[types.UID]bool) ([]*corev1.Pod, map[types.UID]bool) {
	nodeNames := make(map[string]bool, len(r.nodes))
	for _, n := range r.nodes {
		nodeNames[n.Name] = true
	}
	claimsByName := make(map[string]*karpv1.NodeClaim, len(r.claims))
	for _, c := range r.claims {
		claimsByName[c.Name] = c
	}
	var tripped []*corev1.Pod    // pods the refusal backoff just stopped (refusals.go)
	var candidates []*corev1.Pod // pending pods that may need capacity (see needCapacity)
	for _, pod := range r.pods {
		if view.Counted[pod.UID] || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Spec.SchedulerName != p.opts.SchedulerName {
			continue
		}
		if p.scheduledByNomination(pod, nodeNames, view.InFlight) {
			// The scheduler preempted pods on an existing node for it, and will place it there.
			continue
		}
		if p.backedOff(pod, claimsByName, &tripped) {
			continue
		}
		if enqueued[pod.UID] || p.IsProvisionable(pod) {
			candidates = append(candidates, pod)
		}
	}
	pending := p.needCapacity(candidates, enqueued)
	for _, pod := range view.Reschedulable {
		if pod.Spec.SchedulerName == p.opts.SchedulerName {
			pending = append(pending, pod)
		}
	}
	// What a pod was told is kept while it is unbound, planned this time or not: one counted on a
	// claim in flight is told again only if that claim fails for another reason.
	unbound := make(map[types.UID]bool, len(pending))
	for _, pod := range r.pods {
		if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
			unbound[pod.UID] = true
		}
	}
	p.forgetRefusals(unbound)
	p.tellRefused(ctx, tripped, r.nodes, r.pods, r.claims)
	return pending, unbound
}

// plan asks the planner where the pending pods go, over the view and the pools.
func (p *Provisioner) plan(ctx context.Context, pl *planner.Planner, view *planner.View, pools []planner.Pool, pending []*corev1.Pod) (*planner.Plan, error) {
	start := p.opts.Clock.Now()
	dss, err := p.opts.DaemonSets.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	plan := p.wholeGangs(ctx, pl, planner.Input{Pending: pending, Nodes: view.Nodes, Pods: view.Pods, InFlight: view.InFlight, Unsettled: view.Unsettled, Spared: p.spared(pending, view), Pools: pools,
		DaemonSets: planner.DaemonSetPods(dss), Destined: p.destinations(pending)})
	metrics.PlanDuration.Observe(p.opts.Clock.Since(start).Seconds())
	metrics.PodsPerPlan.Observe(float64(len(pending)))
	return plan, nil
}

// record notes, under the lock, where the plan sent each pod: to a claim in flight or to a node
// that exists. The hand-over and the nominations read it; the next plan counts the pods there.
func (p *Provisioner) record(pending []*corev1.Pod, plan *planner.Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteKept(pending)
	for claim, ps := range plan.InFlight {
		for _, pod := range ps {
			p.planOnto(pod, claim)
		}
		p.awaited[claim] = p.opts.Clock.Now().Add(NominationWindow)
	}
	byUID := make(map[types.UID]*corev1.Pod, len(plan.FitsExistingOn))
	for _, pod := range pending {
		if _, ok := plan.FitsExistingOn[pod.UID]; ok {
			byUID[pod.UID] = pod
		}
	}
	for uid, node := range plan.FitsExistingOn {
		if d, ok := p.destined[uid]; ok && d.node != node {
			// Its node has no room for it any more: the room kept there goes to others.
			delete(p.destined, uid)
		}
		p.awaitedNodes[node] = p.opts.Clock.Now().Add(NominationWindow)
		if pod := byUID[uid]; pod != nil {
			p.headFor(pod, node)
		}
	}
}

// report tells the pods the plan could not place why, per NodePool, and clears the nominations
// that no plan backs any more.
func (p *Provisioner) report(ctx context.Context, plan *planner.Plan, unavailable []unavailablePool, unbound map[types.UID]bool) {
	told := p.tellUnavailable(plan.Unplaceable, unavailable, unbound)
	p.clearStaleNominations(ctx, p.withoutWaitingGangs(plan.Unplaceable))
	for _, u := range plan.Unplaceable {
		metrics.PodsUnplaceable.WithLabelValues(u.Kind()).Inc()
		if _, generic := u.Reasons[""]; generic && len(u.Reasons) == 1 && told[u.Pod.UID] {
			continue // "no NodePool is ready" says less than what the pod was told
		}
		p.explain(u)
	}
}

// pools returns the NodePools that may launch, highest weight first, with their instance types,
// and those that may not launch now for a reason replanning cannot change (their node class is
// not ready, or a permanent launch failure holds them back). Other errors fail the plan, which
// is retried.
func (p *Provisioner) pools(ctx context.Context) ([]planner.Pool, map[string][]*cloud.InstanceType, []unavailablePool, error) {
	var pools []planner.Pool
	var unavailable []unavailablePool
	byPool := map[string][]*cloud.InstanceType{}
	listed, err := p.opts.PoolLister.List(labels.Everything())
	if err != nil {
		return nil, nil, nil, err
	}
	for _, np := range listed {
		if np.DeletionTimestamp != nil {
			continue
		}
		if held := p.heldBack(np); held != nil {
			unavailable = append(unavailable, *held)
			continue
		}
		done := metrics.CloudCall("provisioner", "GetInstanceTypes", p.opts.Cloud)
		its, err := p.opts.Cloud.InstanceTypes(ctx, np)
		done(err)
		if up := notReadyPool(np, err); up != nil {
			klog.FromContext(ctx).V(2).Info("NodePool cannot launch; left out of plans", "nodePool", np.Name, "reason", up.reason, "message", up.message)
			unavailable = append(unavailable, *up)
			continue
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("listing instance types for NodePool %q: %w", np.Name, err)
		}
		byPool[np.Name] = its
		pools = append(pools, planner.Pool{NodePool: np, InstanceTypes: its})
	}
	planner.SortPools(pools)
	return p.opts.Pools.Prepare(pools), byPool, unavailable, nil
}

// explain records, as Events on the pod, why each NodePool could not hold it. Each Event names
// its NodePool as the related object, which also keeps the recorder from folding the NodePools'
// Events into one series.
func (p *Provisioner) explain(u planner.Unplaceable) {
	names := make([]string, 0, len(u.Reasons))
	for name := range u.Reasons {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		msg := u.Reasons[name]
		var related runtime.Object
		if name != "" {
			msg = fmt.Sprintf("incompatible with NodePool %q: %s", name, msg)
			if np, err := p.opts.PoolLister.Get(name); err == nil {
				related = apis.ForEvents(np)
			}
		}
		p.opts.Recorder.Eventf(u.Pod, related, corev1.EventTypeWarning, "FailedProvisioning", "Provisioning", "%s", msg)
	}
}
