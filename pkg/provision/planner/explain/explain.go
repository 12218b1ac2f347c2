package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Reason says why pod passed the Filters on none of the options, in the words of the plugins
// that refused it, with the detail a user needs to act: the requirement key that conflicts, or the
// largest instance type when none is big enough.
func Reason(pod *corev1.Pod, options []*Option, statuses []*fwk.Status) string {
	counts := map[string]int{}
	insufficient := false
	for _, s := range statuses {
		if s.IsSuccess() {
			continue
		}
		for _, r := range s.Reasons() {
			counts[r]++
			if strings.HasPrefix(r, "Insufficient ") || strings.HasPrefix(r, "Too many pods") {
				insufficient = true
			}
		}
	}
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if counts[reasons[i]] != counts[reasons[j]] {
			return counts[reasons[i]] > counts[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	parts := make([]string, 0, len(reasons)+2)
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s (%d)", r, counts[r]))
	}
	msg := fmt.Sprintf("none of %d offerings fits: %s", len(options), strings.Join(parts, ", "))
	if keys := conflictingKeys(pod, options); len(keys) > 0 {
		msg += "; requirement keys with no compatible offering: " + strings.Join(keys, ", ")
	}
	if taint, ok := untolerated(pod, options); ok {
		msg += fmt.Sprintf("; the pod does not tolerate the NodePool's taint %s", taint.ToString())
	}
	if insufficient {
		msg += "; " + largest(pod, options)
	}
	return msg
}

// untolerated returns a NoSchedule or NoExecute taint of the NodePool that the pod does not
// tolerate. Every option of a pool carries the same taints, so the first option speaks for all.
func untolerated(pod *corev1.Pod, options []*Option) (corev1.Taint, bool) {
	if len(options) == 0 {
		return corev1.Taint{}, false
	}
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), options[0].Info.Node().Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, true)
}

// conflictingKeys returns the keys of the pod's node selector and required node affinity that no
// offering's labels satisfy on their own.
func conflictingKeys(pod *corev1.Pod, options []*Option) []string {
	var reqs []corev1.NodeSelectorRequirement
	for k, v := range pod.Spec.NodeSelector {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}})
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) == 1 {
			reqs = append(reqs, terms[0].MatchExpressions...)
		}
	}
	var keys []string
	for _, r := range reqs {
		sel, err := scheduling.NewSelector([]corev1.NodeSelectorRequirement{r})
		if err != nil {
			continue
		}
		matched := false
		for _, o := range options {
			if sel.Matches(o.Info.Node().Labels) {
				matched = true
				break
			}
		}
		if !matched {
			keys = append(keys, describeRequirement(r, options))
		}
	}
	sort.Strings(keys)
	return keys
}

func describeRequirement(r corev1.NodeSelectorRequirement, options []*Option) string {
	offered := map[string]bool{}
	for _, o := range options {
		if v, ok := o.Info.Node().Labels[r.Key]; ok {
			offered[v] = true
		}
	}
	vals := make([]string, 0, len(offered))
	for v := range offered {
		vals = append(vals, v)
	}
	sort.Strings(vals)
	if len(options) > 0 {
		// A custom key the claim settles: the pool offers the values its requirements allow.
		if f, ok := options[0].C.Pool.FreeKey(r.Key); ok {
			if f.Values == nil {
				return fmt.Sprintf("%s %s %v (NodePool allows %s)", r.Key, r.Operator, r.Values, nodepool.DescribeAllowed(options[0].C.Pool.NodePool, r.Key))
			}
			vals = slices.Clone(f.Values)
		}
	}
	if len(vals) > 8 {
		vals = append(vals[:8], "...")
	}
	return fmt.Sprintf("%s %s %v (NodePool offers %v)", r.Key, r.Operator, r.Values, vals)
}

// largest names the offering with the most allocatable cpu among those the pod's node affinity
// allows, and compares it with what the pod asks for.
func largest(pod *corev1.Pod, options []*Option) string {
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	var best *Option
	for _, o := range options {
		if ok, _ := affinity.Match(o.Info.Node()); !ok {
			continue
		}
		if best == nil || o.C.Allocatable.Cpu().Cmp(*best.C.Allocatable.Cpu()) > 0 ||
			(o.C.Allocatable.Cpu().Cmp(*best.C.Allocatable.Cpu()) == 0 && o.C.Allocatable.Memory().Cmp(*best.C.Allocatable.Memory()) > 0) {
			best = o
		}
	}
	req := scheduling.PodRequests(pod)
	if best == nil {
		return fmt.Sprintf("the pod requests cpu %s, memory %s", req.Cpu(), req.Memory())
	}
	a := best.C.Allocatable
	return fmt.Sprintf("the largest instance type, %s, has cpu %s, memory %s allocatable; the pod requests cpu %s, memory %s",
		best.C.It.Name, a.Cpu(), a.Memory(), req.Cpu(), req.Memory())
}

func QuantityString(list corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := list[name]
	if !ok {
		return "0"
	}
	return q.String()
}

// Option is one offering with a template node holding the pod's would-be neighbours; only the
// explanation of an unplaceable pod still weighs every offering on its own.
type Option struct {
	C    *nodepool.Candidate
	Info *framework.NodeInfo
}
