package planner

import (
	"context"
	"fmt"
	"sort"
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

// minValues are the pool's requirements with minValues.
func (ps *poolState) minValues() []karpv1.NodeSelectorRequirementWithMinValues {
	var out []karpv1.NodeSelectorRequirementWithMinValues
	for _, r := range ps.NodePool.Spec.Template.Spec.Requirements {
		if r.MinValues != nil {
			out = append(out, r)
		}
	}
	return out
}

// minValuesShort says which requirement the offerings leave short of its minValues, or "".
// Values are counted over the labels the offerings' nodes would register with.
func (ps *poolState) minValuesShort(offerings []int) string {
	reqs := ps.minValues()
	if len(reqs) == 0 {
		return ""
	}
	var short []string
	for _, r := range reqs {
		values := map[string]bool{}
		for _, i := range offerings {
			if v, ok := ps.compatible[i].labels[r.Key]; ok {
				values[v] = true
			}
		}
		n := len(values)
		if _, free := ps.freeKey(r.Key); free {
			// No offering carries the key: the claim's node carries the one value its pods chose
			// (customlabels.go).
			n = 1
		}
		if n < *r.MinValues {
			short = append(short, fmt.Sprintf("%s has %d of the %d values minValues asks for", r.Key, n, *r.MinValues))
		}
	}
	sort.Strings(short)
	return strings.Join(short, "; ")
}

// minValuesAfter is what minValuesShort says of the alive offerings whose type would hold the
// claim with the weighed pod on it; it asks the capacity half for every such type, so it runs
// only for pools that set minValues.
func (pl *Planner) minValuesAfter(ctx context.Context, oc *openClaim, ck *check, alive []int) string {
	if len(oc.pool.minValues()) == 0 {
		return ""
	}
	var holding []int
	for _, i := range alive {
		if pl.capacityFits(ctx, oc, ck, oc.pool.compatible[i].typ) {
			holding = append(holding, i)
		}
	}
	return oc.pool.minValuesShort(holding)
}

// widen adds to kept, in price order, offerings of holding whose values the requirements with
// minValues still lack, past MaxInstanceTypes if need be: truncating to the cheapest types must
// not undo what the claim was admitted for.
func (ps *poolState) widen(kept, holding []int) []int {
	if ps.minValuesShort(kept) == "" {
		return kept
	}
	in := map[int]bool{}
	for _, i := range kept {
		in[i] = true
	}
	for _, i := range holding {
		if in[i] || ps.minValuesShort(kept) == "" {
			continue
		}
		for _, r := range ps.minValues() {
			if v, ok := ps.compatible[i].labels[r.Key]; ok && !ps.hasValue(kept, r.Key, v) {
				kept = append(kept, i)
				in[i] = true
				break
			}
		}
	}
	sort.SliceStable(kept, func(a, b int) bool { return kept[a] < kept[b] })
	return kept
}

func (ps *poolState) hasValue(offerings []int, key, value string) bool {
	for _, i := range offerings {
		if ps.compatible[i].labels[key] == value {
			return true
		}
	}
	return false
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
