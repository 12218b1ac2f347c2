package nodepool

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
)

// The values of free custom keys (customlabels.go) that a pod tries on a claim, and that a
// claim's template nodes carry.

// keyValue is one custom label of a claim; a LabelChoice is the values picked for one pod.
type keyValue struct{ Key, Value string }

type LabelChoice []keyValue

// noChoice is the one way to weigh a pod that reads no open key: with the claim as it is.
var noChoice = []LabelChoice{nil}

// maxLabelChoices bounds how many combinations of values one pod tries on one claim, when it reads
// several open keys: past that, a pod the first ones do not fit is refused rather than weighed on
// a product that grows with every key.
const maxLabelChoices = 64

// Choices are the label values to weigh pod with on a claim of the pool that has chosen chosen,
// each a way to settle the open keys the pod reads; noChoice when it reads none, and none at all
// when it accepts no value the pool allows. A pod reads a key its constraints name (keys). A pod
// whose Filters read more than its spec tells (keys.all: volumes) settles every key, so that no
// value picked later can be one it fails on. A key that allows any value has no default to fall
// back on, so the pod that opens a claim settles it (unlabelledReason refuses those that cannot).
func (ps *State) Choices(pod *corev1.Pod, keys podkeys.Keys, chosen LabelChoice) []LabelChoice {
	if len(ps.Free) == 0 {
		return noChoice
	}
	var lists [][]string
	var open []string
	for _, f := range ps.Free {
		if chosen.has(f.Key) || !(keys.All || f.Values == nil || keys.Reads(f.Key)) {
			continue
		}
		vals := f.candidates(pod)
		if len(vals) == 0 {
			return nil
		}
		lists = append(lists, vals)
		open = append(open, f.Key)
	}
	if len(lists) == 0 {
		return noChoice
	}
	return product(open, lists)
}

// product returns every combination of one value per key, the first key's values varying
// slowest, at most maxLabelChoices of them.
func product(keys []string, lists [][]string) []LabelChoice {
	out := []LabelChoice{nil}
	for k, vals := range lists {
		var next []LabelChoice
		for _, c := range out {
			for _, v := range vals {
				if len(next) == maxLabelChoices {
					break
				}
				next = append(next, append(slices.Clip(c), keyValue{keys[k], v}))
			}
		}
		out = next
	}
	return out
}

// DaemonChoices are the label values to probe a DaemonSet pod with, for the pool's free keys it
// names; nil when it names none. Which value a claim gets is not known when its daemons are, so
// a daemon that runs on some value the pool allows is counted on every node of the pool, as
// Karpenter counts the daemons compatible with the pool's requirements: a node a little too big
// rather than one its daemons do not fit on.
func (ps *State) DaemonChoices(p *corev1.Pod) []LabelChoice {
	var keys []string
	var lists [][]string
	for _, f := range ps.Free {
		if !namesKey(p, f.Key) {
			continue
		}
		if vals := f.candidates(p); len(vals) > 0 {
			keys, lists = append(keys, f.Key), append(lists, vals)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return product(keys, lists)
}

// namesKey reports whether the pod's node selector or required node affinity names key.
func namesKey(p *corev1.Pod, key string) bool {
	if _, ok := p.Spec.NodeSelector[key]; ok {
		return true
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if slices.ContainsFunc(t.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool { return e.Key == key }) {
				return true
			}
		}
	}
	return false
}

func (c LabelChoice) has(key string) bool {
	return slices.ContainsFunc(c, func(kv keyValue) bool { return kv.Key == key })
}

// Labels returns the choice as a map, nil when empty.
func (c LabelChoice) Labels() map[string]string {
	if len(c) == 0 {
		return nil
	}
	out := make(map[string]string, len(c))
	for _, kv := range c {
		out[kv.Key] = kv.Value
	}
	return out
}

// String names the choice, to cache the template nodes labelled with it.
func (c LabelChoice) String() string {
	var b strings.Builder
	for _, kv := range c {
		b.WriteString(kv.Key)
		b.WriteByte('=')
		b.WriteString(kv.Value)
		b.WriteByte(0)
	}
	return b.String()
}
