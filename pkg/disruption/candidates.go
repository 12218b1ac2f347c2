package disruption

import (
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Candidate is a node that voluntary disruption may remove.
type Candidate struct {
	Claim *karpv1.NodeClaim
	Node  *corev1.Node
	Pool  *karpv1.NodePool
	// InstanceType and Price are what the node runs as; Priced is false when the catalog no
	// longer lists its offering (consolidation then leaves it alone: it cannot know the saving).
	InstanceType *cloud.InstanceType
	Price        float64
	Priced       bool
	// Pods are the pods that must move when the node goes: those a drain evicts, DaemonSet pods
	// aside (they go with their node).
	Pods []*corev1.Pod
	// Gangs are the PodGroups with a gang policy ("namespace/name") that Pods belong to; set only
	// for the candidates of gang drift, the one method that takes such nodes.
	Gangs []string
}

// CapacityType is the node's karpenter.sh/capacity-type.
func (c *Candidate) CapacityType() string { return c.Node.Labels[karpv1.CapacityTypeLabelKey] }

// Consolidatable reports whether consolidateAfter has passed since the node's pods last changed.
func (c *Candidate) Consolidatable() bool { return c.Claim.IsTrue(karpv1.ConditionTypeConsolidatable) }

// Drifted reports whether the claim carries Drifted=True.
func (c *Candidate) Drifted() bool { return c.Claim.IsTrue(karpv1.ConditionTypeDrifted) }

// Candidates returns the nodes voluntary disruption may act on, and, for the others that Tailor
// manages, why not. A node qualifies when its NodeClaim is initialized and not being deleted, the
// node is not leaving, not nominated, not annotated do-not-disrupt, has no pod whose
// do-not-disrupt is in force, and every pod that must move can be evicted under its
// PodDisruptionBudget now. The disruption loop's own nodes in flight (closed) are left out.
func Candidates(s *State, closed map[string]bool) (out []*Candidate, blocked map[string]string) {
	return candidates(s, closed, false)
}

// candidates is Candidates; with gangsMove, a pod of a gang does not keep its node out, and the
// candidate's Gangs name the gangs of its pods (see gangDrift).
func candidates(s *State, closed map[string]bool, gangsMove bool) (out []*Candidate, blocked map[string]string) {
	blocked = map[string]string{}
	managed := map[string]bool{}
	for _, n := range s.Nodes {
		if _, ok := s.claimOf(n); ok {
			managed[n.Name] = true
		}
	}
	pods := s.podsByNode(managed)
	nominated := s.nominated()
	pdbs := newPDBIndex(s.PDBs)
	for _, n := range s.Nodes {
		claim, ok := s.claimOf(n)
		if !ok {
			continue
		}
		pool := s.Pools[claim.Labels[karpv1.NodePoolLabelKey]]
		if why := ineligible(s, n, claim, pool, pods[n.Name], nominated, closed, pdbs, gangsMove); why != "" {
			blocked[n.Name] = why
			continue
		}
		c := &Candidate{Claim: claim, Node: n, Pool: pool}
		c.InstanceType, c.Price, c.Priced = s.price(pool.Name, n)
		for _, p := range pods[n.Name] {
			if scheduling.NeedsEviction(p) && !scheduling.IsDaemonSetPod(p) {
				c.Pods = append(c.Pods, p)
				if g := gangOf(p); s.Gangs[g] && !slices.Contains(c.Gangs, g) {
					c.Gangs = append(c.Gangs, g)
				}
			}
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Node.Name < out[j].Node.Name })
	return out, blocked
}

// Why a node is no candidate for a while only, with nothing for a user to do: it gets no
// DisruptionBlocked Event. Such an Event would also hide the lasting reason that may follow: the
// events API folds the Events of one reason about one object, within minutes, into a series that
// keeps the first message.
const (
	alreadyDisrupting = "it is already being disrupted"
	notInitialized    = "it is not initialized yet"
	nominatedNow      = "pods are nominated to it"
	awaitedBy         = "pods planned onto it are still on their way"
)

// passing says whether why is one of the reasons above.
func passing(why string) bool {
	return why == alreadyDisrupting || why == notInitialized || why == nominatedNow || why == awaitedBy
}

func ineligible(s *State, n *corev1.Node, claim *karpv1.NodeClaim, pool *karpv1.NodePool, pods []*corev1.Pod,
	nominated, closed map[string]bool, pdbs *pdbIndex, gangsMove bool) string {
	switch {
	case s.Unavailable[claim.Labels[karpv1.NodePoolLabelKey]] != "":
		return fmt.Sprintf("its NodePool %q cannot launch: %s", claim.Labels[karpv1.NodePoolLabelKey], s.Unavailable[claim.Labels[karpv1.NodePoolLabelKey]])
	case pool == nil:
		return fmt.Sprintf("its NodePool %q does not exist", claim.Labels[karpv1.NodePoolLabelKey])
	case !claim.IsTrue(karpv1.ConditionTypeInitialized):
		return notInitialized
	case closed[n.Name] || scheduling.IsLeaving(n, claim):
		return alreadyDisrupting
	case n.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" || claim.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true":
		return fmt.Sprintf("it is annotated %s", karpv1.DoNotDisruptAnnotationKey)
	}
	for _, p := range pods {
		if !scheduling.NeedsEviction(p) {
			continue
		}
		if doNotDisrupt(p, s.Now) {
			return fmt.Sprintf("pod %s/%s is annotated %s=%s", p.Namespace, p.Name, karpv1.DoNotDisruptAnnotationKey, p.Annotations[karpv1.DoNotDisruptAnnotationKey])
		}
		if scheduling.IsDaemonSetPod(p) {
			continue
		}
		if g := gangOf(p); s.Gangs[g] && !gangsMove {
			return fmt.Sprintf("pod %s/%s belongs to the gang of PodGroup %s, whose pods run all together or not at all: only drift replaces its nodes, all of them in one command",
				p.Namespace, p.Name, g)
		}
		if why := pdbs.blocks(p); why != "" {
			return why
		}
	}
	// What a user set (the annotations, the budgets) is named before what passes by itself: only
	// the first reason is returned, and only a lasting one is written in an Event.
	switch {
	case nominated[n.Name]:
		return nominatedNow
	case s.Awaited[claim.Name] || s.AwaitedNodes[n.Name]:
		return awaitedBy
	}
	return ""
}

// doNotDisrupt reports whether the pod's karpenter.sh/do-not-disrupt is in force: "true", or a
// duration that has not yet passed since the pod started. Any other value is ignored, as in
// Karpenter.
func doNotDisrupt(p *corev1.Pod, now time.Time) bool {
	v, ok := p.Annotations[karpv1.DoNotDisruptAnnotationKey]
	if !ok {
		return false
	}
	if v == "true" {
		return true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return false
	}
	start := p.CreationTimestamp
	if p.Status.StartTime != nil {
		start = *p.Status.StartTime
	}
	return now.Before(start.Add(d))
}

// pdbIndex answers whether evicting a pod would be refused by the Eviction API right now.
type pdbIndex struct {
	pdbs      []*policyv1.PodDisruptionBudget
	selectors []labels.Selector
}

func newPDBIndex(pdbs []*policyv1.PodDisruptionBudget) *pdbIndex {
	idx := &pdbIndex{}
	for _, pdb := range pdbs {
		// As the Eviction API reads policy/v1 PDBs: an empty selector selects every pod of the
		// namespace, a missing or invalid one none.
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		idx.pdbs = append(idx.pdbs, pdb)
		idx.selectors = append(idx.selectors, sel)
	}
	return idx
}

// blocks says why the pod cannot be evicted now, or "": a PDB that covers it allows no
// disruption, or several PDBs cover it (the Eviction API refuses those outright).
func (idx *pdbIndex) blocks(p *corev1.Pod) string {
	var matched []*policyv1.PodDisruptionBudget
	for i, pdb := range idx.pdbs {
		if pdb.Namespace == p.Namespace && idx.selectors[i].Matches(labels.Set(p.Labels)) {
			matched = append(matched, pdb)
		}
	}
	switch {
	case len(matched) > 1:
		return fmt.Sprintf("pod %s/%s is covered by %d PodDisruptionBudgets, so it cannot be evicted", p.Namespace, p.Name, len(matched))
	case len(matched) == 1 && matched[0].Status.DisruptionsAllowed <= 0:
		return fmt.Sprintf("PodDisruptionBudget %s/%s allows no disruption of pod %s", matched[0].Namespace, matched[0].Name, p.Name)
	}
	return ""
}

// gangOf is the "namespace/name" of the PodGroup the pod belongs to, or "".
func gangOf(p *corev1.Pod) string {
	if name, ok := scheduling.PodGroupOf(p); ok {
		return p.Namespace + "/" + name
	}
	return ""
}
