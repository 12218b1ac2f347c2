package nodepool

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// A NodePool requirement on a custom label key (one that no instance type, template label or
// well-known label defines) says which values the pool's nodes may carry. When it allows one
// value, every node carries it. When it allows several (In with more than one value) or any
// (Exists, Gt, Lt), Karpenter narrows each NodeClaim's requirement by its pods' and labels the
// node with the value that is left: a pod selecting example.com/team=search gets a node labelled
// search. The value is a property of the claim, not of an offering, so it is not in the
// candidates' labels; a claim leaves it open until a pod that reads the key (in its node
// selector, affinity or topology) picks one, trying the values in turn on the template node,
// where the Filter plugins decide. Pods that do not read the key never pick, so they do not shut
// the claim to pods that select some other value.

// freeKey is a custom key whose requirements leave the value to the claim.
type freeKey struct {
	Key string
	// Values are the values the pool allows, in the order its first In requirement lists them;
	// nil when it allows any value that allows matches (Exists, Gt, Lt, and NotIn beside them).
	Values []string
	allows *scheduling.Selector
}

// CustomKeys sorts the pool's requirements on custom keys into pinned ones, each with the one
// value every node carries, and free ones. ok is false when a key's requirements allow no value
// at all: the pool can launch nothing. A key that some instance type defines keeps its old
// treatment (the first In value, which the type's own label overrides): the type decides it.
func CustomKeys(pool *karpv1.NodePool, reqs []corev1.NodeSelectorRequirement, types []*cloud.InstanceType) (map[string]string, []freeKey, bool) {
	pinned := map[string]string{}
	var free []freeKey
	var order []string
	byKey := map[string][]corev1.NodeSelectorRequirement{}
	for _, r := range reqs {
		if _, templated := pool.Spec.Template.Labels[r.Key]; templated || isWellKnownLabel(r.Key) {
			continue
		}
		if _, seen := byKey[r.Key]; !seen {
			order = append(order, r.Key)
		}
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	for _, key := range order {
		rs := byKey[key]
		first := slices.IndexFunc(rs, func(r corev1.NodeSelectorRequirement) bool { return r.Operator == corev1.NodeSelectorOpIn })
		if slices.ContainsFunc(types, func(it *cloud.InstanceType) bool { _, ok := it.Labels[key]; return ok }) {
			if first >= 0 && len(rs[first].Values) > 0 {
				pinned[key] = rs[first].Values[0]
			}
			continue
		}
		sel, err := scheduling.NewSelector(rs)
		if err != nil || sel.Matches(nil) {
			// Invalid (admission refuses it), or the key may be absent (NotIn, DoesNotExist):
			// nodes carry no label for it, as before.
			continue
		}
		f := freeKey{Key: key, allows: sel}
		if first >= 0 {
			f.Values = []string{}
			for _, v := range rs[first].Values {
				if !slices.Contains(f.Values, v) && sel.Matches(map[string]string{key: v}) {
					f.Values = append(f.Values, v)
				}
			}
		}
		switch {
		case f.Values != nil && len(f.Values) == 0:
			return nil, nil, false
		case len(f.Values) == 1:
			pinned[key] = f.Values[0]
		default:
			free = append(free, f)
		}
	}
	return pinned, free, true
}

// namedValues are the values of key the pod accepts by name: its node selector's, or, when every
// required node-affinity term has In on key, the union of those terms' values. ok is false when
// the pod names none (it may still read the key: Exists, NotIn, a topology key). This only picks
// what to try; NodeAffinity decides on the template node.
func namedValues(pod *corev1.Pod, key string) ([]string, bool) {
	if v, ok := pod.Spec.NodeSelector[key]; ok {
		return []string{v}, true
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return nil, false
	}
	var out []string
	for _, t := range terms {
		var term []string
		found := false
		for _, e := range t.MatchExpressions {
			if e.Key != key || e.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			if !found {
				term, found = e.Values, true
				continue
			}
			term = slices.DeleteFunc(slices.Clone(term), func(v string) bool { return !slices.Contains(e.Values, v) })
		}
		if !found {
			return nil, false
		}
		for _, v := range term {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out, true
}

// candidates are the values of f to try for pod, in order: the pool's values (those the pod
// names, when it names some), or, for a pool that allows any value, the values the pod names
// that the pool allows.
func (f freeKey) candidates(pod *corev1.Pod) []string {
	named, ok := namedValues(pod, f.Key)
	if !ok {
		return f.Values
	}
	var out []string
	for _, v := range named {
		if f.Values == nil && f.allows.Matches(map[string]string{f.Key: v}) || slices.Contains(f.Values, v) {
			out = append(out, v)
		}
	}
	if f.Values != nil {
		// The pool's order, so that which value a claim gets does not depend on how pods spell it.
		slices.SortStableFunc(out, func(a, b string) int { return slices.Index(f.Values, a) - slices.Index(f.Values, b) })
	}
	return out
}

// UnlabelledReason says why the pool cannot open a claim for pod, when the pool allows any value
// of a key and the pod names none it allows. Karpenter would label such a node with a random
// number; a made-up value means nothing to the pod, which asked only that the label exist or
// reads it as a topology domain, and is a label the cluster's owners never chose. Pods that name
// a value open such claims, and others may join them.
func (ps *State) UnlabelledReason(pod *corev1.Pod) string {
	for _, f := range ps.Free {
		if f.Values != nil || len(f.candidates(pod)) > 0 {
			continue
		}
		return fmt.Sprintf("requirement keys with no compatible offering: %s (the NodePool allows any value of it, %s, and the pod names none it allows; "+
			"Tailor does not make up a label value: select one with a nodeSelector or an In node-affinity term)", f.Key, DescribeAllowed(ps.NodePool, f.Key))
	}
	return ""
}

// DescribeAllowed spells the pool's requirements on key.
func DescribeAllowed(pool *karpv1.NodePool, key string) string {
	var parts []string
	for _, r := range pool.Spec.Template.Spec.Requirements {
		switch {
		case r.Key != key:
		case len(r.Values) == 0:
			parts = append(parts, string(r.Operator))
		default:
			parts = append(parts, fmt.Sprintf("%s %v", r.Operator, r.Values))
		}
	}
	return strings.Join(parts, " and ")
}

// FreeKey returns the pool's free key named key.
func (ps *State) FreeKey(key string) (freeKey, bool) {
	for _, f := range ps.Free {
		if f.Key == key {
			return f, true
		}
	}
	return freeKey{}, false
}
