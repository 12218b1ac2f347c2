package nodepool

import (
	"fmt"
	"sort"
	"strings"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// MinValues are the pool's requirements with minValues.
func (ps *State) MinValues() []karpv1.NodeSelectorRequirementWithMinValues {
	var out []karpv1.NodeSelectorRequirementWithMinValues
	for _, r := range ps.NodePool.Spec.Template.Spec.Requirements {
		if r.MinValues != nil {
			out = append(out, r)
		}
	}
	return out
}

// MinValuesShort says which requirement the offerings leave short of its minValues, or "".
// Values are counted over the labels the offerings' nodes would register with.
func (ps *State) MinValuesShort(offerings []int) string {
	reqs := ps.MinValues()
	if len(reqs) == 0 {
		return ""
	}
	var short []string
	for _, r := range reqs {
		values := map[string]bool{}
		for _, i := range offerings {
			if v, ok := ps.Compatible[i].Labels[r.Key]; ok {
				values[v] = true
			}
		}
		n := len(values)
		if _, free := ps.FreeKey(r.Key); free {
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

// Widen adds to kept, in price order, offerings of holding whose values the requirements with
// minValues still lack, past MaxInstanceTypes if need be: truncating to the cheapest types must
// not undo what the claim was admitted for.
func (ps *State) Widen(kept, holding []int) []int {
	if ps.MinValuesShort(kept) == "" {
		return kept
	}
	in := map[int]bool{}
	for _, i := range kept {
		in[i] = true
	}
	for _, i := range holding {
		if in[i] || ps.MinValuesShort(kept) == "" {
			continue
		}
		for _, r := range ps.MinValues() {
			if v, ok := ps.Compatible[i].Labels[r.Key]; ok && !ps.hasValue(kept, r.Key, v) {
				kept = append(kept, i)
				in[i] = true
				break
			}
		}
	}
	sort.SliceStable(kept, func(a, b int) bool { return kept[a] < kept[b] })
	return kept
}

func (ps *State) hasValue(offerings []int, key, value string) bool {
	for _, i := range offerings {
		if ps.Compatible[i].Labels[key] == value {
			return true
		}
	}
	return false
}
