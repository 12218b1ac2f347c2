package planner

import (
	"context"
)

// MinValuesPolicy says what the planner does when a claim's options cannot keep a NodePool
// requirement's minValues: Strict (Karpenter's default) refuses the pod on that claim, and the
// pod goes to another claim or pool, or stays pending; BestEffort launches anyway with what
// there is, and marks the NodeClaim karpenter.sh/nodeclaim-min-values-relaxed.
type MinValuesPolicy string

const (
	MinValuesStrict     MinValuesPolicy = "Strict"
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// SetMinValuesPolicy sets the policy; the zero value is Strict.
func (pl *Planner) SetMinValuesPolicy(p MinValuesPolicy) { pl.minValues = p }

func (pl *Planner) strictMinValues() bool { return pl.minValues != MinValuesBestEffort }

// minValuesAfter is what minValuesShort says of the alive offerings whose type would hold the
// claim with the weighed pod on it; it asks the capacity half for every such type, so it runs
// only for pools that set minValues.
func (pl *Planner) minValuesAfter(ctx context.Context, oc *openClaim, ck *check, alive []int) string {
	if len(oc.pool.MinValues()) == 0 {
		return ""
	}
	var holding []int
	for _, i := range alive {
		if pl.capacityFits(ctx, oc, ck, oc.pool.Compatible[i].Typ) {
			holding = append(holding, i)
		}
	}
	return oc.pool.MinValuesShort(holding)
}
