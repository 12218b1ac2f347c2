// Package scheduling holds pure values shared by the planner, the lifecycle controller and the
// clouds: node selector requirements over label sets, resource arithmetic and taints.
package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Selector matches label sets against a list of node selector requirements, all of which must
// hold (one NodeSelectorTerm). It supports In, NotIn, Exists, DoesNotExist, Gt and Lt exactly as
// the scheduler's NodeAffinity plugin does, because it is built on the same helper.
type Selector struct {
	sel  *nodeaffinity.NodeSelector
	reqs []corev1.NodeSelectorRequirement
}

// NewSelector validates reqs and returns a Selector; an empty list matches everything.
func NewSelector(reqs []corev1.NodeSelectorRequirement) (*Selector, error) {
	if len(reqs) == 0 {
		return &Selector{}, nil
	}
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}},
	})
	if err != nil {
		// The helper's message points into the selector built here; say which of the caller's
		// requirements it is.
		for _, r := range reqs {
			if _, rerr := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{r}}},
			}); rerr != nil {
				return nil, fmt.Errorf("invalid requirement %q %s %q: %w", r.Key, r.Operator, r.Values, rerr)
			}
		}
		return nil, fmt.Errorf("invalid requirements: %w", err)
	}
	return &Selector{sel: sel, reqs: reqs}, nil
}

// Matches reports whether labels satisfy every requirement.
func (s *Selector) Matches(labels map[string]string) bool {
	if s.sel == nil {
		return true
	}
	return s.sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}})
}

// MatchesDefined is Matches restricted to the requirements whose key is in labels or in defined:
// keys that neither the label set nor the caller knows about are left for later.
func (s *Selector) MatchesDefined(labels map[string]string, defined func(key string) bool) bool {
	var known []corev1.NodeSelectorRequirement
	for _, r := range s.reqs {
		if _, ok := labels[r.Key]; ok || defined(r.Key) {
			known = append(known, r)
		}
	}
	if len(known) == len(s.reqs) {
		return s.Matches(labels)
	}
	sub, err := NewSelector(known)
	if err != nil {
		return false
	}
	return sub.Matches(labels)
}

// SingleValue returns the only value an In requirement on key allows, if reqs pin it to one.
func SingleValue(reqs []corev1.NodeSelectorRequirement, key string) (string, bool) {
	for _, r := range reqs {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0], true
		}
	}
	return "", false
}
