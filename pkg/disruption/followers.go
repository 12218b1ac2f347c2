package disruption

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// A probe places every pod of the candidates at once, as Karpenter's consolidation does. The
// drain does not: it evicts through the Eviction API, and a PodDisruptionBudget that lets fewer
// of them go than are leaving makes the pods go in turns, each next one only once the one
// before runs again. The first pod evicted comes back while its siblings still run where they
// are, and the scheduler weighs its required pod affinity against them there. A probe that
// moved a whole zone-affine group to another zone (its first pod free to go anywhere, no
// sibling placed yet) made a removal whose first pod fitted nowhere: its siblings' zone had no
// room, and the budget let no other sibling go; the node stayed draining and the pod Pending
// (harness seed 1815).
//
// So a leaving pod whose affinity term matches pods that leave with it, when a budget covering it
// and one of them does not let all the leaving pods it covers go at once, is planned held to the
// domains where the term's pods run now, itself aside: where the scheduler will look for them
// when it is evicted first.

// heldToSiblings returns pending with such pods replaced by copies held to those domains.
// leaving are the UIDs of the candidates' pods; pods and nodes are the cluster's.
func heldToSiblings(pending []*corev1.Pod, leaving map[types.UID]bool, pods []*corev1.Pod, nodes map[string]*corev1.Node, pdbs []*policyv1.PodDisruptionBudget) []*corev1.Pod {
	var out []*corev1.Pod
	for i, p := range pending {
		held := holdToSiblings(p, leaving, pods, nodes, pdbs)
		if held == p {
			continue
		}
		if out == nil {
			out = slices.Clone(pending)
		}
		out[i] = held
	}
	if out == nil {
		return pending
	}
	return out
}

// holdToSiblings returns p, or a copy held to the domains of its affinity terms' pods.
func holdToSiblings(p *corev1.Pod, leaving map[types.UID]bool, pods []*corev1.Pod, nodes map[string]*corev1.Node, pdbs []*policyv1.PodDisruptionBudget) *corev1.Pod {
	a := p.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return p
	}
	var holds []corev1.NodeSelectorRequirement
	for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.NamespaceSelector != nil {
			continue // which namespaces it reads is the API's to say; left to the probe as it is
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			continue
		}
		namespaces := term.Namespaces
		if len(namespaces) == 0 {
			namespaces = []string{p.Namespace}
		}
		var domains []string
		var siblings []*corev1.Pod // the term's pods that leave too
		for _, q := range pods {
			if q.UID == p.UID || q.Spec.NodeName == "" || !slices.Contains(namespaces, q.Namespace) || !sel.Matches(labels.Set(q.Labels)) {
				continue
			}
			if leaving[q.UID] {
				siblings = append(siblings, q)
			}
			if n := nodes[q.Spec.NodeName]; n != nil {
				if v, ok := n.Labels[term.TopologyKey]; ok && !slices.Contains(domains, v) {
					domains = append(domains, v)
				}
			}
		}
		if len(domains) > 0 && inTurns(p, siblings, leaving, pods, pdbs) {
			slices.Sort(domains)
			holds = append(holds, corev1.NodeSelectorRequirement{Key: term.TopologyKey, Operator: corev1.NodeSelectorOpIn, Values: domains})
		}
	}
	if len(holds) == 0 {
		return p
	}
	held := p.DeepCopy()
	if held.Spec.Affinity.NodeAffinity == nil {
		held.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := held.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	for i := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		t := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, holds...)
	}
	return held
}

// inTurns reports whether a budget that covers p and one of its leaving siblings lets fewer of
// the leaving pods it covers go at once than there are: then p may be evicted while that sibling
// has to stay until p runs again. Siblings free to go leave with p, and once they are gone the
// scheduler lets the first of the group go anywhere.
func inTurns(p *corev1.Pod, siblings []*corev1.Pod, leaving map[types.UID]bool, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) bool {
	for _, pdb := range pdbs {
		if pdb.Namespace != p.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(p.Labels)) ||
			!slices.ContainsFunc(siblings, func(q *corev1.Pod) bool { return q.Namespace == pdb.Namespace && sel.Matches(labels.Set(q.Labels)) }) {
			continue
		}
		covered := 0
		for _, q := range pods {
			if leaving[q.UID] && q.Namespace == pdb.Namespace && sel.Matches(labels.Set(q.Labels)) {
				covered++
			}
		}
		if int(pdb.Status.DisruptionsAllowed) < covered {
			return true
		}
	}
	return false
}
