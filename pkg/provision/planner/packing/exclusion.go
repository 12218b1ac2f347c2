package packing

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Pods that exclude each other: a pod with required pod anti-affinity keeps the pods its terms
// select out of its topology domain, and the scheduler holds it to that both ways (a pod is also
// refused beside a pod whose anti-affinity selects it). Among such pods the one planned first
// wins the domain, so the order decides which of them run. Karpenter plans the largest first (cpu,
// then memory, descending), so that when two pods cannot both run, the larger one does; the
// balanced order of Order may put a small pod before a large one (a pod without
// requests goes with the memory-heavy queue, and comes next once a cpu-heavy pod is taken), and
// then the small pod took the zone a 2-cpu pod was pinned to.
//
// So the pods that may exclude each other keep the places the balanced order gives them as a
// group, and among themselves take Karpenter's order. The Filter plugins still decide every fit;
// the order only decides who asks first. Within a plan this guarantees, for each pair that
// excludes each other, that the pod Karpenter would plan first is planned first, and as a pod
// placed later is refused wherever it would break an earlier one's anti-affinity (or its own),
// no claim is opened for a pod whose placement makes one already planned unschedulable.

// exclusiveLargestFirst reorders the pods of order that carry a required pod anti-affinity term
// over a key other than the hostname, or that such a term of a pod in order selects, into Karpenter's order, each in one of the places those
// pods held; the other pods keep their places.
func exclusiveLargestFirst(order []*corev1.Pod) []*corev1.Pod {
	terms := antiAffinityTerms(order)
	if len(terms) == 0 {
		return order
	}
	var at []int
	var exclusive []*corev1.Pod
	for i, p := range order {
		if len(excludingTerms(p)) > 0 || selectedByAny(terms, p) {
			at = append(at, i)
			exclusive = append(exclusive, p)
		}
	}
	if len(exclusive) < 2 {
		return order
	}
	sortLargestFirst(exclusive)
	out := make([]*corev1.Pod, len(order))
	copy(out, order)
	for k, i := range at {
		out[i] = exclusive[k]
	}
	return out
}

// excludingTerms are the pod's required anti-affinity terms over a key other than the hostname.
// Over the hostname a pod refused beside another gets a node of its own: the order decides where
// pods run, not whether they do, so the balanced order keeps them (in BenchmarkPlan's diverse
// mix, Karpenter's order for its hostname anti-affinity class cost 3% more on one catalog, 2% less
// on the other, and a quarter more cpu).
func excludingTerms(p *corev1.Pod) []corev1.PodAffinityTerm {
	terms := RequiredAntiTerms(p)
	if !slices.ContainsFunc(terms, func(t corev1.PodAffinityTerm) bool { return t.TopologyKey == corev1.LabelHostname }) {
		return terms
	}
	var out []corev1.PodAffinityTerm
	for _, t := range terms {
		if t.TopologyKey != corev1.LabelHostname {
			out = append(out, t)
		}
	}
	return out
}

// antiTerm is what a required anti-affinity term selects: pods in namespaces (nil: any) whose
// labels match selector.
type antiTerm struct {
	namespaces map[string]bool
	selector   labels.Selector
}

// antiAffinityTerms returns the distinct required anti-affinity terms of the pods. A term that
// selects namespaces by label is taken to select every namespace: counting too many pods as
// exclusive only orders them largest first.
func antiAffinityTerms(pods []*corev1.Pod) []antiTerm {
	var out []antiTerm
	seen := map[string]bool{}
	for _, p := range pods {
		for _, t := range excludingTerms(p) {
			sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
			if err != nil {
				sel = labels.Everything()
			}
			var ns map[string]bool
			nsKey := "*"
			if t.NamespaceSelector == nil {
				ns = map[string]bool{}
				if len(t.Namespaces) == 0 {
					ns[p.Namespace] = true
				}
				for _, n := range t.Namespaces {
					ns[n] = true
				}
				nsKey = strings.Join(podkeys.SortedKeys(ns), ",")
			}
			id := nsKey + "\x00" + sel.String()
			if !seen[id] {
				seen[id] = true
				out = append(out, antiTerm{namespaces: ns, selector: sel})
			}
		}
	}
	return out
}

func selectedByAny(terms []antiTerm, p *corev1.Pod) bool {
	set := labels.Set(p.Labels)
	for _, t := range terms {
		if (t.namespaces == nil || t.namespaces[p.Namespace]) && t.selector.Matches(set) {
			return true
		}
	}
	return false
}

// sortLargestFirst is Karpenter's queue order: cpu requests descending, then memory descending,
// then older first, then by UID.
func sortLargestFirst(pods []*corev1.Pod) {
	type keyed struct {
		pod      *corev1.Pod
		cpu, mem int64
	}
	ks := make([]keyed, len(pods))
	for i, p := range pods {
		r := scheduling.PodRequests(p)
		ks[i] = keyed{pod: p, cpu: r.Cpu().MilliValue(), mem: r.Memory().Value()}
	}
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.cpu != b.cpu {
			return a.cpu > b.cpu
		}
		if a.mem != b.mem {
			return a.mem > b.mem
		}
		if !a.pod.CreationTimestamp.Equal(&b.pod.CreationTimestamp) {
			return a.pod.CreationTimestamp.Before(&b.pod.CreationTimestamp)
		}
		return a.pod.UID < b.pod.UID
	})
	for i, k := range ks {
		pods[i] = k.pod
	}
}

func RequiredAntiTerms(p *corev1.Pod) []corev1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}
