package disruption

import (
	"fmt"
	"slices"
	"strings"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// Command is one decision: remove these candidates, launching these replacements first.
type Command struct {
	Reason karpv1.DisruptionReason
	// Method names the method that decided, for logs: emptiness, drift, multi-node or
	// single-node consolidation.
	Method       string
	Candidates   []*Candidate
	Replacements []*planner.PlannedClaim
	// Savings is the hourly price of the candidates minus that of the replacements' cheapest
	// offerings.
	Savings float64
}

// Decision is "delete" when nothing replaces the candidates, "replace" otherwise.
func (c *Command) Decision() string {
	if len(c.Replacements) == 0 {
		return "delete"
	}
	return "replace"
}

// Nodes returns the candidates' node names.
func (c *Command) Nodes() []string {
	out := make([]string, len(c.Candidates))
	for i, cand := range c.Candidates {
		out[i] = cand.Node.Name
	}
	return out
}

// String is the message of the Events and logs: "Disrupting: Underutilized, replacing
// m6i.2xlarge with m6i.large, saves $0.29/h".
func (c *Command) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Disrupting: %s", c.Reason)
	if c.Reason == karpv1.DisruptionReasonDrifted {
		if cond := c.Candidates[0].Claim.GetCondition(karpv1.ConditionTypeDrifted); cond != nil && cond.Reason != "" {
			fmt.Fprintf(&b, " (%s)", cond.Reason)
		}
	}
	removed := typeNames(c.Candidates)
	if len(c.Replacements) == 0 {
		fmt.Fprintf(&b, ", deleting %s", removed)
	} else {
		var with []string
		for _, r := range c.Replacements {
			with = append(with, r.Options[0].InstanceType.Name)
		}
		fmt.Fprintf(&b, ", replacing %s with %s", removed, strings.Join(with, ", "))
	}
	if c.Savings >= 0 {
		fmt.Fprintf(&b, ", saves $%.2f/h", c.Savings)
	} else {
		fmt.Fprintf(&b, ", costs $%.2f/h more", -c.Savings)
	}
	return b.String()
}

func typeNames(cands []*Candidate) string {
	var names []string
	for _, c := range cands {
		name := c.Node.Labels["node.kubernetes.io/instance-type"]
		if name == "" {
			name = c.Node.Name
		}
		names = append(names, name)
	}
	if len(names) > 3 {
		return fmt.Sprintf("%d nodes (%s, ...)", len(names), strings.Join(names[:3], ", "))
	}
	if len(names) > 1 {
		return fmt.Sprintf("%d nodes (%s)", len(names), strings.Join(names, ", "))
	}
	return names[0]
}

// priceOf adds up the candidates' hourly prices.
func priceOf(cands []*Candidate) float64 {
	total := 0.0
	for _, c := range cands {
		total += c.Price
	}
	return total
}

// replacementPrice is what the replacements cost at their cheapest offerings.
func replacementPrice(rs []*planner.PlannedClaim) float64 {
	total := 0.0
	for _, r := range rs {
		total += r.Options[0].Offering.PricePerHour
	}
	return total
}

// cheaper narrows a replacement to the offerings that cost less than the nodes it replaces, so
// that whichever of them the cloud launches, the move saves money. When a spot node is replaced
// (spot), only spot offerings count, there must be at least spotMin instance types among them,
// and the replacement is offered the spotMin cheapest: always moving to the single cheapest spot
// pool would chase the price into the pools most likely to be interrupted, and interruption
// would then bring the node back up the price ladder, over and over.
//
// The NodeClaim lists instance types, zones and capacity types apart (planner.NewNodeClaim), so
// the cloud may launch any combination of the kept ones: a type is kept only if none of its
// offerings in those zones and capacity types costs as much as the nodes replaced. So that a
// cheap on-demand option does not rule out every spot type by its on-demand price (or the other
// way round), both capacity types together, spot alone and on-demand alone are each tried, and
// the replacement takes the one with the cheapest option, then the most options.
func cheaper(r *planner.PlannedClaim, than float64, spot bool, spotMin int) (*planner.PlannedClaim, bool) {
	choices := [][]string{{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}, {karpv1.CapacityTypeSpot}, {karpv1.CapacityTypeOnDemand}}
	if spot {
		choices = [][]string{{karpv1.CapacityTypeSpot}}
	}
	var best []planner.Option
	for _, cts := range choices {
		kept, types := cheaperAs(r.Options, cts, than, spot, spotMin)
		if len(kept) == 0 || (spot && types < spotMin) {
			continue
		}
		if best == nil || kept[0].Offering.PricePerHour < best[0].Offering.PricePerHour ||
			(kept[0].Offering.PricePerHour == best[0].Offering.PricePerHour && len(kept) > len(best)) {
			best = kept
		}
	}
	if best == nil {
		return nil, false
	}
	out := *r
	out.Options = best
	return &out, true
}

// cheaperAs keeps the options of the capacity types cts whose instance types cost less than than
// in every zone and capacity type the kept options span, at most spotMin types when spot; and
// counts the types.
func cheaperAs(options []planner.Option, cts []string, than float64, spot bool, spotMin int) ([]planner.Option, int) {
	var cheap []planner.Option
	zones, capacityTypes := map[string]bool{}, map[string]bool{}
	for _, o := range options {
		if slices.Contains(cts, o.Offering.CapacityType) && o.Offering.PricePerHour < than {
			cheap = append(cheap, o)
			zones[o.Offering.Zone], capacityTypes[o.Offering.CapacityType] = true, true
		}
	}
	dear := map[string]bool{}
	for _, o := range cheap {
		for _, other := range o.InstanceType.Offerings {
			if other.Available && capacityTypes[other.CapacityType] && zones[other.Zone] && other.PricePerHour >= than {
				dear[o.InstanceType.Name] = true
			}
		}
	}
	var kept []planner.Option
	types := map[string]bool{}
	for _, o := range cheap {
		if dear[o.InstanceType.Name] || (spot && !types[o.InstanceType.Name] && len(types) == spotMin) {
			continue
		}
		types[o.InstanceType.Name] = true
		kept = append(kept, o)
	}
	return kept, len(types)
}
