package planner

import (
	"context"
	"fmt"
	"strings"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
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

// MinValuesRelaxedAnnotationKey marks a NodeClaim launched with fewer values than a requirement's
// minValues asked for, under the BestEffort policy.
const MinValuesRelaxedAnnotationKey = karpv1.Group + "/nodeclaim-min-values-relaxed"

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

// OptionsShort says which of the pool's requirements with minValues the options fall short of,
// or "": for a caller that narrows a planned claim's options (consolidation keeps the cheaper
// ones) and must not narrow them below what the pool asks for.
func OptionsShort(pool *karpv1.NodePool, options []Option) string {
	var short []string
	for _, r := range pool.Spec.Template.Spec.Requirements {
		if r.MinValues == nil {
			continue
		}
		if n := optionValues(options, r.Key); n < *r.MinValues {
			short = append(short, fmt.Sprintf("%s has %d of the %d values minValues asks for", r.Key, n, *r.MinValues))
		}
	}
	return strings.Join(short, "; ")
}

// optionValues counts the distinct values of key over the options' nodes.
func optionValues(options []Option, key string) int {
	values := map[string]bool{}
	for _, o := range options {
		for _, v := range []string{o.InstanceType.Labels[key], offeringValue(o, key)} {
			if v != "" {
				values[v] = true
			}
		}
	}
	return len(values)
}
