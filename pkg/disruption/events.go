package disruption

import (
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// The disruption loop's Event reasons are Karpenter's (sigs.k8s.io/karpenter pkg/events), so that
// alerts written on them keep working. DisruptionFailed is Tailor's alone: Karpenter has no Event
// for replacements that never initialized.
const (
	ReasonTerminating      = "DisruptionTerminating"
	ReasonLaunching        = "DisruptionLaunching"
	ReasonWaitingReadiness = "DisruptionWaitingReadiness"
	ReasonBlocked          = "DisruptionBlocked"
	ReasonUnconsolidatable = "Unconsolidatable"
	ReasonFailed           = "DisruptionFailed"
)

// How long an Event about the same object is not written again. Blocked and Unconsolidatable
// would otherwise be written on every pass (every few seconds) for as long as a node stays so;
// Karpenter waits the same periods. The budget's Event on a NodePool is held for a minute only,
// since a budget's schedule can open or close it every minute.
const (
	blockedEvery          = 2 * time.Minute
	unconsolidatableEvery = 15 * time.Minute
	poolBlockedEvery      = time.Minute
)

// actionDecide is the action of the Events that say why the loop leaves a node alone, and
// actionReplace that of the Events on a replacement; tailor top reads the Disrupt action as
// decisions taken, which these are not.
const (
	actionDecide  = "Decide"
	actionReplace = "Replace"
)

// dedupe remembers, per key, until when an Event is not written again.
type dedupe struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	until map[string]time.Time
	// sweepAbove is the size past which the next allow drops the keys whose hold has ended.
	sweepAbove int
}

// dedupeSweepFloor is the fewest keys kept before a sweep.
const dedupeSweepFloor = 10000

func newDedupe(clk clock.PassiveClock) *dedupe {
	return &dedupe{clock: clk, until: map[string]time.Time{}, sweepAbove: dedupeSweepFloor}
}

// allow reports whether the Event of key may be written now, and if so holds it back for period.
func (d *dedupe) allow(key string, period time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	if until, ok := d.until[key]; ok && now.Before(until) {
		return false
	}
	if len(d.until) > d.sweepAbove {
		// The next sweep waits until the map has doubled again: a fleet whose held keys are more
		// than the floor (5,000 nodes, each blocked on its Node and its NodeClaim) swept the
		// whole map on every call, two per node per pass.
		for k, until := range d.until {
			if !now.Before(until) {
				delete(d.until, k)
			}
		}
		d.sweepAbove = max(2*len(d.until), dedupeSweepFloor)
	}
	d.until[key] = now.Add(period)
	return true
}

// eventOnBoth writes the Event on the Node and on its NodeClaim, once per period for each and
// message unless period is 0. Karpenter holds back any message once one is written; keyed on the
// message too, a node first blocked while it initializes still says at once when a pod's
// do-not-disrupt then holds it, and a node whose reason flips writes one Event per reason a period.
func (c *Controller) eventOnBoth(node *corev1.Node, claim *karpv1.NodeClaim, kind, reason, action, msg string, period time.Duration) {
	if c.opts.Recorder == nil {
		return
	}
	for _, target := range []struct {
		obj runtime.Object
		uid types.UID
	}{{node, uidOf(node)}, {apis.ForEvents(claim), uidOfClaim(claim)}} {
		if target.uid == "" && period > 0 {
			continue
		}
		if period > 0 && !c.dedupe.allow(reason+"/"+string(target.uid)+"/"+msg, period) {
			continue
		}
		c.opts.Recorder.Eventf(target.obj, nil, kind, reason, action, "%s", msg)
	}
}

func uidOf(n *corev1.Node) types.UID {
	if n == nil {
		return ""
	}
	return n.UID
}

func uidOfClaim(c *karpv1.NodeClaim) types.UID {
	if c == nil {
		return ""
	}
	return c.UID
}

// terminating writes DisruptionTerminating on the Node and the NodeClaim of a candidate being
// removed: Karpenter's "Disrupting Node: <reason>" and "Disrupting NodeClaim: <reason>", followed
// by what the command does and saves.
func (c *Controller) terminating(cand *Candidate, cmd *Command) {
	if c.opts.Recorder == nil {
		return
	}
	what := strings.TrimPrefix(cmd.String(), "Disrupting: ")
	c.opts.Recorder.Eventf(cand.Node, nil, corev1.EventTypeNormal, ReasonTerminating, "Disrupt", "Disrupting Node: %s", what)
	c.opts.Recorder.Eventf(apis.ForEvents(cand.Claim), nil, corev1.EventTypeNormal, ReasonTerminating, "Disrupt", "Disrupting NodeClaim: %s", what)
}

// launching writes DisruptionLaunching and DisruptionWaitingReadiness on a replacement the
// moment it is created: the candidates wait for it to initialize before they are removed.
func (c *Controller) launching(claim *karpv1.NodeClaim, cmd *Command) {
	if c.opts.Recorder == nil {
		return
	}
	obj := apis.ForEvents(claim)
	c.opts.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonLaunching, actionReplace, "Launching NodeClaim: %s", cmd.Reason)
	c.opts.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonWaitingReadiness, actionReplace, "Waiting on readiness to continue disruption")
}

// explain writes why the pass left nodes alone: DisruptionBlocked for the nodes that are no
// candidates at all, Unconsolidatable for candidates consolidation weighed and turned down, and
// DisruptionBlocked on each NodePool whose budget allows nothing for a reason while it has nodes.
// Each is held back for its period per object, so a node that stays blocked says so once in a
// while, not on every pass.
func (c *Controller) explain(s *State, report Report) {
	if c.opts.Recorder == nil {
		return
	}
	for _, n := range s.Nodes {
		claim, ok := s.claimOf(n)
		if !ok {
			continue
		}
		if why := report.Blocked[n.Name]; why != "" {
			c.eventOnBoth(n, claim, corev1.EventTypeNormal, ReasonBlocked, actionDecide, "Disruption is blocked: "+why, blockedEvery)
		}
		if why := report.Unconsolidatable[n.Name]; why != "" {
			c.eventOnBoth(n, claim, corev1.EventTypeNormal, ReasonUnconsolidatable, actionDecide, why, unconsolidatableEvery)
		}
	}
	for _, key := range report.ClosedBudgets {
		pool := s.Pools[key.pool]
		if pool == nil || !c.dedupe.allow(ReasonBlocked+"/"+string(pool.UID)+"/"+string(key.reason), poolBlockedEvery) {
			continue
		}
		c.opts.Recorder.Eventf(apis.ForEvents(pool), nil, corev1.EventTypeNormal, ReasonBlocked, actionDecide,
			"No allowed disruptions for disruption reason %s due to blocking budget", key.reason)
	}
}
