package disruption

import (
	"context"
	"fmt"
	"time"

	schedulinglisters "k8s.io/client-go/listers/scheduling/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/provision"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// Gate is the provisioner's side of a disruption: it keeps the scheduler from reserving pods onto
// nodes being removed, and counts the removed nodes' pods on their replacement.
// *provision.Provisioner is one.
type Gate interface {
	Close(nodes []string) map[types.UID]string
	Reopen(nodes []string)
	Closed() []string
	Adopt(claim string, pods []*corev1.Pod)
	Ledger() provision.Ledger
}

// Options are what the disruption loop reads and writes.
type Options struct {
	Kube        kubernetes.Interface
	NodeClaims  karpclient.NodeClaimInterface
	ClaimLister karplisters.NodeClaimLister
	PoolLister  karplisters.NodePoolLister
	Nodes       corelisters.NodeLister
	Pods        corelisters.PodLister
	PDBs        policylisters.PodDisruptionBudgetLister
	DaemonSets  appslisters.DaemonSetLister
	Cloud       cloud.CloudProvider
	Gate        Gate
	// Planner is a planner of the disruption loop's own: planners are not safe for concurrent
	// use, and the provisioner's plans at the same time.
	Planner Planner
	// CheckPlanner, when set, is the planner of the drains' re-checks (Unplaceable), so that they
	// neither wait on the loop's probes nor hold them up; without one they share Planner.
	CheckPlanner Planner
	Recorder     events.EventRecorder
	Clock        clock.WithTicker
	// ValidationPeriod is the wait between deciding on emptiness or consolidation and the
	// re-check before acting; PollInterval how often the loop looks for work.
	ValidationPeriod time.Duration
	PollInterval     time.Duration
	// SpotToSpotMin is the fewest cheaper instance types a spot node must have to be replaced by
	// single-node consolidation (see cheaper).
	SpotToSpotMin int
	// ReplacementTimeout bounds the wait for replacements to initialize; past it the command is
	// abandoned and its nodes kept.
	ReplacementTimeout time.Duration
	// PodGroups are read for gang policies (State.Gangs); nil when gang scheduling is off.
	PodGroups schedulinglisters.PodGroupLister
	// Pools keeps the NodePools' offerings from pass to pass; the operator shares the
	// provisioner's. Nil: a cache of the loop's own.
	Pools *planner.PoolCache
}

// singleNodeTimeout bounds single-node consolidation within one pass, as Karpenter's 3 minutes.
const singleNodeTimeout = 3 * time.Minute

// Controller is the disruption loop: one command at a time, decided, validated and carried out.
type Controller struct {
	opts    Options
	trigger chan struct{}
	// dedupe holds back Events the loop would otherwise repeat on every pass.
	dedupe *dedupe
}

// New returns a Controller; it acts once Run is called.
func New(opts Options) *Controller {
	if opts.ReplacementTimeout == 0 {
		opts.ReplacementTimeout = 10 * time.Minute
	}
	if opts.Pools == nil {
		opts.Pools = &planner.PoolCache{}
	}
	// Drains ask Unplaceable from their own goroutines, several at once.
	switch {
	case opts.CheckPlanner != nil:
		opts.CheckPlanner = &lockedPlanner{Planner: opts.CheckPlanner}
	case opts.Planner != nil:
		opts.Planner = &lockedPlanner{Planner: opts.Planner}
		opts.CheckPlanner = opts.Planner
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if opts.Clock != nil {
		clk = opts.Clock
	}
	return &Controller{opts: opts, trigger: make(chan struct{}, 1), dedupe: newDedupe(clk)}
}

// Trigger asks for a pass soon, e.g. after a NodeClaim became Consolidatable.
func (c *Controller) Trigger() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// idleRest is how many times its own length a pass that found nothing rests before the next
// one, whatever triggers it: the loop then takes at most a fifth of a core while it finds nothing.
// In a scale-up every node that initializes turns Consolidatable and triggers a pass, and at
// 20,000 pods on 5,000 nodes passes ran back to back, each finding every node awaited by its
// pods: 17% of two cores in a profile of the binding phase, beside a scheduler minutes behind.
const idleRest = 4

// restAfter is how long the loop rests after a pass that took took and found nothing.
func restAfter(took time.Duration) time.Duration {
	return idleRest * max(took, 0)
}

// Run makes passes until ctx ends: after each command at once (there may be more to do), else
// on a trigger or every PollInterval, and no sooner than restAfter the pass.
func (c *Controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("disruption")
	ctx = klog.NewContext(ctx, logger)
	c.recoverAbandoned(ctx)
	for {
		began := c.opts.Clock.Now()
		acted, err := c.pass(ctx)
		if err != nil {
			logger.Error(err, "Disruption pass failed")
		}
		if acted && err == nil {
			continue
		}
		if rest := restAfter(c.opts.Clock.Since(began)); rest > 0 {
			select {
			case <-ctx.Done():
				return
			case <-c.opts.Clock.After(rest):
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.trigger:
		case <-c.opts.Clock.After(c.opts.PollInterval):
		}
	}
}

// pass decides on one command and carries it out; it reports whether it did.
func (c *Controller) pass(ctx context.Context) (bool, error) {
	s, err := c.readPassState(ctx)
	if err != nil {
		return false, err
	}
	c.reopenVanished(s)
	cmd := c.decide(ctx, s)
	if cmd == nil {
		return false, nil
	}
	return c.execute(ctx, cmd)
}

// decide runs the methods on s and publishes the eligibility and budget metrics.
func (c *Controller) decide(ctx context.Context, s *State) *Command {
	closed := setOf(c.opts.Gate.Closed())
	cmd, report := Decide(ctx, s, c.opts.Planner, closed, DecideOptions{SpotToSpotMin: c.opts.SpotToSpotMin,
		Deadline: c.opts.Clock.Now().Add(singleNodeTimeout), Now: c.opts.Clock.Now})
	c.explain(s, report)
	for _, err := range report.BudgetErrors {
		klog.FromContext(ctx).Error(err, "Disruption budget cannot be read; it allows no disruption")
	}
	for reason, n := range report.Eligible {
		metrics.DisruptionEligibleNodes.WithLabelValues(string(reason)).Set(float64(n))
		metrics.EligibleNodes(string(reason), n)
	}
	for key, n := range report.Allowed {
		metrics.DisruptionAllowed.WithLabelValues(key.pool, string(key.reason)).Set(float64(n))
		metrics.AllowedDisruptions(key.pool, string(key.reason), n)
	}
	return cmd
}

// DecideOptions tune Decide.
type DecideOptions struct {
	SpotToSpotMin int
	// Deadline stops single-node consolidation from starting another simulation.
	Deadline time.Time
	Now      func() time.Time
}

// Report is what a pass saw: nodes eligible per reason, and the disruptions each pool's budgets
// allow now per reason.
type Report struct {
	Eligible     map[karpv1.DisruptionReason]int
	Allowed      map[poolReason]int
	BudgetErrors []error
	// Blocked says, by node, why a node Tailor manages is no candidate, for the lasting reasons
	// (see passing); Unconsolidatable, why consolidation weighed a candidate and left it. The
	// loop writes them as DisruptionBlocked and Unconsolidatable Events.
	Blocked, Unconsolidatable map[string]string
	// ClosedBudgets are the pools and reasons whose budget allows nothing now.
	ClosedBudgets []poolReason
}

type poolReason struct {
	pool   string
	reason karpv1.DisruptionReason
}

// Decide is one full pass of the methods over s, without acting: the first command any method
// finds, or nil. closed are nodes already being removed.
func Decide(ctx context.Context, s *State, pl Planner, closed map[string]bool, opts DecideOptions) (*Command, Report) {
	return decideWith(ctx, newProber(s, pl), closed, opts)
}

// decideWith is Decide with the prober given, so that tests can compare probers.
func decideWith(ctx context.Context, probe *prober, closed map[string]bool, opts DecideOptions) (*Command, Report) {
	s := probe.state
	cands, blocked := Candidates(s, closed)
	b, allowed, errs := poolBudgets(s, closed)
	// Every reason starts at 0 so that decide publishes a 0 when the last eligible node of one
	// goes; a gauge set only for the reasons seen would keep its last count for good.
	eligible := map[karpv1.DisruptionReason]int{karpv1.DisruptionReasonDrifted: 0, karpv1.DisruptionReasonEmpty: 0, karpv1.DisruptionReasonUnderutilized: 0}
	report := Report{Eligible: eligible, Allowed: allowed, BudgetErrors: errs,
		Blocked: map[string]string{}, Unconsolidatable: map[string]string{}, ClosedBudgets: b.closedBy}
	for node, why := range blocked {
		if !passing(why) {
			report.Blocked[node] = why
		}
	}
	for _, cand := range cands {
		switch {
		case cand.Drifted():
			report.Eligible[karpv1.DisruptionReasonDrifted]++
		case cand.Consolidatable() && len(cand.Pods) == 0:
			report.Eligible[karpv1.DisruptionReasonEmpty]++
		case cand.Consolidatable():
			report.Eligible[karpv1.DisruptionReasonUnderutilized]++
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Deadline.IsZero() {
		opts.Deadline = opts.Now().Add(singleNodeTimeout)
	}
	d := &decider{state: s, probe: probe, cands: cands, closed: closed, budgets: b, spotMin: max(1, opts.SpotToSpotMin), deadline: opts.Deadline, now: opts.Now,
		unconsolidatable: report.Unconsolidatable}
	return d.next(ctx), report
}

// readState reads the cluster from the informers and the provisioner's ledger.
func (c *Controller) readState(ctx context.Context) (*State, error) { return c.readStateOf(ctx, false) }

// readPassState is readState for a pass: where there is no NodeClaim there is no candidate, and
// it reads no pod, PodDisruptionBudget, DaemonSet or PodGroup (a pass every 10 s listed all 50,000
// pods of the memory benchmark's 5,000 nodes, which Tailor did not launch). The nodes, the
// NodePools and their budgets are read as ever, so the pass's metrics stay current. A drain's
// re-check (Unplaceable) reads them always: its node's NodeClaim may be gone already.
func (c *Controller) readPassState(ctx context.Context) (*State, error) {
	return c.readStateOf(ctx, true)
}

func (c *Controller) readStateOf(ctx context.Context, podsOnlyWithClaims bool) (*State, error) {
	// The ledger first: once the provisioner forgets a pod it assumed, the pod is bound in the
	// informers, so a listing after the ledger sees it in one place or the other.
	ledger := c.opts.Gate.Ledger()
	nodes, err := c.opts.Nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	claims, err := c.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	s := &State{Nodes: nodes, Claims: claims, Pools: map[string]*karpv1.NodePool{},
		TypesByPool: map[string][]*cloud.InstanceType{}, Unavailable: map[string]string{}, Now: c.opts.Clock.Now(), prepared: c.opts.Pools}
	s.Planned, s.Assumed, s.Awaited, s.AwaitedNodes = ledger.Planned, ledger.Assumed, ledger.Awaited, ledger.AwaitedNodes
	if !podsOnlyWithClaims || len(claims) > 0 {
		if err := c.readPods(s); err != nil {
			return nil, err
		}
	}
	pools, err := c.opts.PoolLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, np := range pools {
		done := metrics.CloudCall("disruption", "GetInstanceTypes", c.opts.Cloud)
		its, err := c.opts.Cloud.InstanceTypes(ctx, np)
		done(err)
		if nr := cloud.AsNodeClassNotReady(err); nr != nil {
			s.Unavailable[np.Name] = nr.Error()
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing instance types for NodePool %q: %w", np.Name, err)
		}
		s.Pools[np.Name] = np
		s.TypesByPool[np.Name] = its
	}
	return s, nil
}

// readPods fills in s's pods, PodDisruptionBudgets, DaemonSet pods and gangs.
func (c *Controller) readPods(s *State) error {
	var err error
	if s.Pods, err = c.opts.Pods.List(labels.Everything()); err != nil {
		return err
	}
	if s.PDBs, err = c.opts.PDBs.List(labels.Everything()); err != nil {
		return err
	}
	dss, err := c.opts.DaemonSets.List(labels.Everything())
	if err != nil {
		return err
	}
	s.DaemonSets = planner.DaemonSetPods(dss)
	s.Gangs, err = c.gangs()
	return err
}

// reopenVanished reopens closed nodes that no longer exist: nothing can be reserved onto them.
// It indexes the nodes only when some are closed: a pass every few seconds must not build a map
// of every node for nothing.
func (c *Controller) reopenVanished(s *State) {
	closed := c.opts.Gate.Closed()
	if len(closed) == 0 {
		return
	}
	present := make(map[string]bool, len(s.Nodes))
	for _, n := range s.Nodes {
		present[n.Name] = true
	}
	var gone []string
	for _, n := range closed {
		if !present[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		c.opts.Gate.Reopen(gone)
	}
}

func setOf(names []string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}

// gangs are the PodGroups with a gang policy, by "namespace/name".
func (c *Controller) gangs() (map[string]bool, error) {
	if c.opts.PodGroups == nil {
		return nil, nil
	}
	groups, err := c.opts.PodGroups.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, g := range groups {
		if g.Spec.SchedulingPolicy.Gang != nil {
			out[g.Namespace+"/"+g.Name] = true
		}
	}
	return out, nil
}
