package disruption

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// A drain asks Unplaceable just before it evicts, whatever started it: consolidation, drift,
// emptiness, expiration, repair or a NodeClaim deleted by hand. The decision that started it
// looked at the cluster as it was then; by the time a pod is evicted, pods have come and gone,
// and a pod that waited may have taken the room planned for it. An evicted pod that its owner
// recreates and that then fits nowhere stays Pending: the drain holds its eviction instead, until
// the pod has a place again or the node's termination deadline comes.

// Unplaceable answers, for pods a drain is about to evict from node, which of them would find no
// place afterwards, and why. A place is a node that is up and not leaving, capacity in flight,
// or a NodeClaim a NodePool can launch (the provisioner plans one for the pods of leaving nodes
// before they go); the scheduler's Filter plugins must accept the pod there after the move,
// beside the pods of every node that is leaving, and after the pods that wait unplaced have
// taken their pick (see waiting.go). Pods that no controller brings back (and DaemonSet pods)
// need no place and are never named.
func (c *Controller) Unplaceable(ctx context.Context, node string, pods []*corev1.Pod) (map[types.UID]string, error) {
	check := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		if comesBack(p) {
			check[p.UID] = p
		}
	}
	if len(check) == 0 {
		return nil, nil
	}
	start := c.opts.Clock.Now()
	s, err := c.readState(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster to re-check the evictions from node %s: %w", node, err)
	}
	read := c.opts.Clock.Since(start)
	out := unplaceable(ctx, c.opts.CheckPlanner, s, check)
	klog.FromContext(ctx).V(1).Info("Re-checked evictions", "node", node, "pods", len(check), "unplaceable", len(out),
		"read", read, "planned", c.opts.Clock.Since(start)-read)
	return out, nil
}

// unplaceable plans the pods of check, and every other pod of a leaving node, as pending, over
// the nodes that stay, capacity in flight and the NodePools, after the pods that wait.
func unplaceable(ctx context.Context, pl Planner, s *State, check map[types.UID]*corev1.Pod) map[types.UID]string {
	view := s.cluster().View(s.TypesByPool)
	in := planner.Input{Nodes: view.Nodes, InFlight: view.InFlight, Unsettled: view.Unsettled, Pools: s.pools(), DaemonSets: s.DaemonSets}
	for _, p := range view.Pods {
		// A pod counted on the replacement planned for it is planned anew: the room it was
		// promised may have gone to another pod.
		if check[p.UID] == nil {
			in.Pods = append(in.Pods, p)
		}
	}
	pending := map[types.UID]bool{}
	for _, p := range view.Reschedulable {
		in.Pending = append(in.Pending, p)
		pending[p.UID] = true
	}
	for uid, p := range check {
		if !pending[uid] {
			in.Pending = append(in.Pending, scheduling.Unbound(p))
		}
	}
	waiting := waitingOf(s.Pods, view)
	first := make(map[types.UID]bool, len(waiting))
	for _, p := range waiting {
		first[p.UID] = true
	}
	in.Pending = append(waiting, in.Pending...)
	in.First = first
	plan := pl.Plan(ctx, in)
	out := map[types.UID]string{}
	for _, u := range plan.Unplaceable {
		if check[u.Pod.UID] != nil {
			out[u.Pod.UID] = reasonsOf(u)
		}
	}
	return out
}

// reasonsOf is an Unplaceable's reasons, one per NodePool, in order.
func reasonsOf(u planner.Unplaceable) string {
	var reasons []string
	for pool, why := range u.Reasons {
		if pool != "" {
			why = pool + ": " + why
		}
		reasons = append(reasons, why)
	}
	sort.Strings(reasons)
	return strings.Join(reasons, "; ")
}

// comesBack reports whether evicting p makes its controller create a pod in its place, which then
// needs one: a pod with a controller that is not a DaemonSet (a DaemonSet's pod belongs to its
// node).
func comesBack(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return !scheduling.IsDaemonSetPod(p)
		}
	}
	return false
}

// lockedPlanner lets the drains' re-checks and the loop share one planner, which is not safe for
// concurrent use.
type lockedPlanner struct {
	mu sync.Mutex
	Planner
}

func (l *lockedPlanner) Plan(ctx context.Context, in planner.Input) *planner.Plan {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Planner.Plan(ctx, in)
}
