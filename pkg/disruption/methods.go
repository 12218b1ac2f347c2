package disruption

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	poolbudget "github.com/tailor-sh/tailor/pkg/nodepool/budget"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// maxMultiNodeCandidates bounds the candidates multi-node consolidation weighs at once, as
// Karpenter does: the binary search over them stays a handful of simulations.
const maxMultiNodeCandidates = 100

// decider finds the next command, trying the methods in order: emptiness, drift, gang drift,
// multi-node and then single-node consolidation. It is a pure function of the state, the budgets and the
// planner's answers.
type decider struct {
	state *State
	probe *prober
	cands []*Candidate
	// closed are the nodes already being removed, which gang drift leaves out too.
	closed  map[string]bool
	budgets *budgets
	spotMin int
	// deadline bounds single-node consolidation, which may simulate once per candidate; the
	// next pass picks up where this one stopped mattering.
	deadline time.Time
	now      func() time.Time
	// unconsolidatable says, by node, why consolidation turned the node down in this pass.
	unconsolidatable map[string]string
}

// next returns the first command any method finds, or nil.
func (d *decider) next(ctx context.Context) *Command {
	for _, method := range []func(context.Context) *Command{d.emptiness, d.drift, d.gangDrift, d.multiNode, d.singleNode} {
		if cmd := method(ctx); cmd != nil {
			return cmd
		}
	}
	return nil
}

// emptiness removes every consolidatable node that has no pods to move, as many as the budgets
// allow, in one command.
func (d *decider) emptiness(context.Context) *Command {
	cmd := &Command{Reason: karpv1.DisruptionReasonEmpty, Method: "emptiness"}
	taken := map[string]int{}
	for _, c := range d.cands {
		if len(c.Pods) > 0 || !c.Consolidatable() {
			continue
		}
		if taken[c.Pool.Name] >= d.budgets.left(c.Pool.Name, cmd.Reason) {
			continue
		}
		taken[c.Pool.Name]++
		cmd.Candidates = append(cmd.Candidates, c)
		cmd.Savings += c.Price
	}
	if len(cmd.Candidates) == 0 {
		return nil
	}
	return cmd
}

// drift replaces one drifted node: empty ones first, then the one drifted longest.
func (d *decider) drift(ctx context.Context) *Command {
	var drifted []*Candidate
	for _, c := range d.cands {
		if c.Drifted() {
			drifted = append(drifted, c)
		}
	}
	sort.SliceStable(drifted, func(i, j int) bool {
		a, b := drifted[i], drifted[j]
		if (len(a.Pods) == 0) != (len(b.Pods) == 0) {
			return len(a.Pods) == 0
		}
		ta := a.Claim.GetCondition(karpv1.ConditionTypeDrifted).LastTransitionTime
		tb := b.Claim.GetCondition(karpv1.ConditionTypeDrifted).LastTransitionTime
		return ta.Before(&tb)
	})
	for _, c := range drifted {
		if d.budgets.left(c.Pool.Name, karpv1.DisruptionReasonDrifted) < 1 {
			continue
		}
		out := d.probe.simulate(ctx, []*Candidate{c})
		if !out.OK() {
			continue
		}
		return &Command{Reason: karpv1.DisruptionReasonDrifted, Method: "drift", Candidates: []*Candidate{c},
			Replacements: out.Replacements, Savings: c.Price - replacementPrice(out.Replacements)}
	}
	return nil
}

// underutilized returns the candidates consolidation may weigh, cheapest to disrupt first: the
// fewest pods to move, then the dearest node.
func (d *decider) underutilized() []*Candidate {
	var out []*Candidate
	for _, c := range d.cands {
		if !c.Consolidatable() {
			continue
		}
		switch {
		case !c.Priced:
			d.refuse(c, fmt.Sprintf("Instance Type %q not found", c.Node.Labels[corev1.LabelInstanceTypeStable]))
		case c.Pool.Spec.Disruption.ConsolidationPolicy == karpv1.ConsolidationPolicyWhenEmpty:
			if len(c.Pods) > 0 {
				d.refuse(c, fmt.Sprintf("NodePool %q has consolidation policy WhenEmpty, but node is not empty", c.Pool.Name))
			}
		default:
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if len(out[i].Pods) != len(out[j].Pods) {
			return len(out[i].Pods) < len(out[j].Pods)
		}
		return out[i].Price > out[j].Price
	})
	return out
}

// multiNode replaces as many nodes as it can with at most one cheaper node, or none: a binary
// search for the longest prefix of the candidates (within the budgets) that can go.
func (d *decider) multiNode(ctx context.Context) *Command {
	var cands []*Candidate
	taken := map[string]int{}
	for _, c := range d.underutilized() {
		if taken[c.Pool.Name] >= d.budgets.left(c.Pool.Name, karpv1.DisruptionReasonUnderutilized) {
			continue
		}
		taken[c.Pool.Name]++
		cands = append(cands, c)
		if len(cands) == maxMultiNodeCandidates {
			break
		}
	}
	var best *Command
	lo, hi := 2, len(cands)
	for lo <= hi {
		mid := (lo + hi) / 2
		if cmd := d.consolidate(ctx, cands[:mid], "multi-node consolidation", false); cmd != nil {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// singleNode deletes one node, or replaces it with one cheaper node.
// A candidate whose twin (see twins) was refused earlier in the pass is refused for the same
// reason without a simulation.
func (d *decider) singleNode(ctx context.Context) *Command {
	refused := twins{}
	for _, c := range d.underutilized() {
		if d.now().After(d.deadline) {
			return nil
		}
		if d.budgets.left(c.Pool.Name, karpv1.DisruptionReasonUnderutilized) < 1 {
			continue
		}
		shape, twinnable := shapeOf(c)
		if why, ok := refused[shape]; twinnable && ok {
			d.refuse(c, why)
			continue
		}
		spot := c.CapacityType() == karpv1.CapacityTypeSpot
		cmd, why := d.consolidateWhy(ctx, []*Candidate{c}, "single-node consolidation", spot)
		if cmd != nil {
			return cmd
		}
		d.refuse(c, why)
		if twinnable {
			refused[shape] = why
		}
	}
	return nil
}

// consolidate returns the command that removes cands, if their pods fit on the other nodes plus
// at most one new node that costs less than they do together. Removals that cannot work by
// resources alone are not simulated (see room).
func (d *decider) consolidate(ctx context.Context, cands []*Candidate, method string, spot bool) *Command {
	cmd, _ := d.consolidateWhy(ctx, cands, method, spot)
	return cmd
}

// consolidateWhy is consolidate, and when it finds no command, why not, in Karpenter's words for
// its Unconsolidatable Events.
func (d *decider) consolidateWhy(ctx context.Context, cands []*Candidate, method string, spot bool) (*Command, string) {
	price := priceOf(cands)
	if d.probe.hopeless(cands, price, spot) {
		return nil, "Can't replace with a cheaper node"
	}
	out := d.probe.simulate(ctx, cands)
	if !out.OK() {
		return nil, out.Unplaceable
	}
	if len(out.Replacements) > 1 {
		return nil, fmt.Sprintf("Can't remove without creating %d candidates", len(out.Replacements))
	}
	cmd := &Command{Reason: karpv1.DisruptionReasonUnderutilized, Method: method, Candidates: cands, Savings: price}
	if len(out.Replacements) == 1 {
		r, ok := cheaper(out.Replacements[0], price, spot, d.spotMin)
		if !ok {
			return nil, "Can't replace with a cheaper node"
		}
		if short := planner.OptionsShort(r.NodePool, r.Options); short != "" {
			// Cheaper, but not with as many values as the pool's minValues ask for.
			return nil, "Can't replace with a cheaper node: " + short
		}
		cmd.Replacements = []*planner.PlannedClaim{r}
		cmd.Savings = price - replacementPrice(cmd.Replacements)
	}
	return cmd, ""
}

// refuse notes why consolidation leaves c alone, the first reason of the pass.
func (d *decider) refuse(c *Candidate, why string) {
	if d.unconsolidatable == nil || why == "" {
		return
	}
	if _, ok := d.unconsolidatable[c.Node.Name]; !ok {
		d.unconsolidatable[c.Node.Name] = why
	}
}

// budgets are the disruptions each pool may still start, by reason.
type budgets struct {
	byPool map[string]map[karpv1.DisruptionReason]int
	// closedBy are the pools and reasons whose budget allows no disruption at all while the pool
	// has nodes: what Karpenter's DisruptionBlocked Event on a NodePool reports.
	closedBy []poolReason
}

func (b *budgets) left(pool string, reason karpv1.DisruptionReason) int {
	return b.byPool[pool][reason]
}

// poolBudgets works out, for each pool and reason, how many more nodes may start disrupting: what
// the budgets allow for the pool's size, less the nodes already disrupting (leaving, or closed by
// a command in progress). Errors name the budget that could not be read; it allows nothing.
func poolBudgets(s *State, closed map[string]bool) (*budgets, map[poolReason]int, []error) {
	total := map[string]int{}
	disrupting := map[string]int{}
	for _, n := range s.Nodes {
		claim, ok := s.claimOf(n)
		if !ok {
			continue
		}
		pool := claim.Labels[karpv1.NodePoolLabelKey]
		if claim.IsTrue(karpv1.ConditionTypeInstanceTerminating) {
			// Going, and no longer part of the pool's size; but still disrupting until it is
			// gone, so that the budget holds at every instant anyone looks.
			disrupting[pool]++
			continue
		}
		// Nodes still starting are not the pool's yet: they neither count nor use up the budget.
		if !claim.IsTrue(karpv1.ConditionTypeInitialized) && !scheduling.IsLeaving(n, claim) {
			continue
		}
		total[pool]++
		if closed[n.Name] || scheduling.IsLeaving(n, claim) || !nodeutil.IsNodeReady(n) {
			disrupting[pool]++
		}
	}
	b := &budgets{byPool: map[string]map[karpv1.DisruptionReason]int{}}
	var errs []error
	allowedNow := map[poolReason]int{}
	for name, pool := range s.Pools {
		b.byPool[name] = map[karpv1.DisruptionReason]int{}
		for _, reason := range karpv1.WellKnownDisruptionReasons {
			allowed, err := poolbudget.Allowed(pool, reason, total[name], s.Now)
			if err != nil {
				errs = append(errs, err)
			}
			b.byPool[name][reason] = max(0, allowed-disrupting[name])
			if allowed == 0 && total[name] > 0 {
				b.closedBy = append(b.closedBy, poolReason{name, reason})
			}
			allowedNow[poolReason{name, reason}] = max(0, allowed-disrupting[name])
		}
	}
	return b, allowedNow, errs
}
