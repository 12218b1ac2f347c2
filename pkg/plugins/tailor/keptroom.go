package tailor

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// keptKey is where PreFilter leaves, for Filter, the room kept on nodes for other pods.
const keptKey fwk.StateKey = Name + "/kept"

// keptRoom is, for one cycle, the room kept on each node for pods on their way there (see the
// provisioner's KeptRoom), and what the cycle's pod asks for.
type keptRoom struct {
	byNode           map[string][]scheduling.Kept
	milliCPU, memory int64
	pod              *corev1.Pod
	// excludes is ExcluderOf(pod).
	excludes func(other *corev1.Pod, nodeLabels map[string]string) bool
}

// Clone returns the value itself: the cycle never changes it.
func (k *keptRoom) Clone() fwk.StateData { return k }

// keptMessage is Filter's answer on a node whose free room is kept for others.
const keptMessage = "the room left on the node is kept for the pods Tailor launched it for"

// repelledMessage is Filter's answer on a node where the pod and a pod on its way there exclude
// each other.
const repelledMessage = "a pod Tailor launched the node for excludes this pod there by required anti-affinity, or this pod excludes it"

func newKeptRoom(pod *corev1.Pod, byNode map[string][]scheduling.Kept) *keptRoom {
	r := scheduling.PodRequests(pod)
	return &keptRoom{byNode: byNode, milliCPU: r.Cpu().MilliValue(), memory: r.Memory().Value(), pod: pod, excludes: ExcluderOf(pod)}
}

// ExcluderOf is scheduling.Kept.Excludes for pod: whether its required anti-affinity, parsed once
// as the scheduler parses it, excludes another pod from a node with the given labels while pod is
// on that node. It is nil when pod has no such terms (or they do not parse: the scheduler then
// refuses pod itself). A term with a namespaceSelector that is not empty is left out: it selects
// by the labels of the other pod's namespace, which are not read here, so the scheduler alone
// weighs it, and this never refuses what the scheduler would take.
func ExcluderOf(pod *corev1.Pod) func(other *corev1.Pod, nodeLabels map[string]string) bool {
	var decidable []corev1.PodAffinityTerm
	for _, t := range fwk.GetPodAntiAffinityTerms(pod.Spec.Affinity) {
		if t.NamespaceSelector == nil || len(t.NamespaceSelector.MatchLabels)+len(t.NamespaceSelector.MatchExpressions) == 0 {
			decidable = append(decidable, t)
		}
	}
	if len(decidable) == 0 {
		return nil
	}
	terms, err := fwk.GetAffinityTerms(pod, decidable)
	if err != nil {
		return nil
	}
	return func(other *corev1.Pod, nodeLabels map[string]string) bool {
		for i := range terms {
			if _, ok := nodeLabels[terms[i].TopologyKey]; ok && terms[i].Matches(other, nil) {
				return true
			}
		}
		return false
	}
}

// repels returns whether the pod and a pod on its way to node exclude each other there by
// required anti-affinity, in either direction, as InterPodAffinity would once both were on it.
// The scheduler weighs that only for pods on the node or nominated to it, and a nomination is
// written after the plan: a pod with no plan (refused everywhere for that very exclusion) would
// otherwise take the node launched for the pod that excludes it, which could then never join
// its zone. A kept pod the node carries (nominated, or assumed) is the scheduler's to weigh in
// its first Filter pass, which adds the nominated pods; in its second, without them, this asks
// again and answers as InterPodAffinity did. Only the node the pod is on its way to is checked,
// not the rest of the terms' topology domain.
func (k *keptRoom) repels(node fwk.NodeInfo) bool {
	kept := k.byNode[node.Node().Name]
	labels := node.Node().Labels
	var on map[types.UID]bool
	for _, p := range kept {
		if p.Pod == nil || (p.Excludes == nil && k.excludes == nil) {
			continue
		}
		if on == nil {
			on = make(map[types.UID]bool, len(node.GetPods()))
			for _, pi := range node.GetPods() {
				on[pi.GetPod().UID] = true
			}
		}
		// p may be the pod itself, listed on a node its plan has just moved it off (the index
		// is up to keptFresh old): the scheduler does not weigh a pod against itself either.
		if on[p.UID] || p.UID == k.pod.UID {
			continue
		}
		if (p.Excludes != nil && p.Excludes(k.pod, labels)) || (k.excludes != nil && k.excludes(p.Pod, labels)) {
			return true
		}
	}
	return false
}

// refuses returns whether the pod would take room kept on node for pods on their way there. It
// asks what NodeResourcesFit asks, with the kept pods counted on the node: a pod slot always, cpu
// and memory only when the pod requests them. Kept pods the node already carries are the
// scheduler's own nominations, which it adds to the node for the first of its two Filter passes,
// or pods it has assumed there: they are not counted twice.
func (k *keptRoom) refuses(node fwk.NodeInfo) bool {
	kept := k.byNode[node.Node().Name]
	if len(kept) == 0 {
		return false
	}
	requested, allocatable := node.GetRequested(), node.GetAllocatable()
	exceeds := func(cpu, memory int64, pods int) bool {
		return pods > allocatable.GetAllowedPodNumber() ||
			(k.milliCPU > 0 && cpu > allocatable.GetMilliCPU()) || (k.memory > 0 && memory > allocatable.GetMemory())
	}
	cpu, memory, pods := requested.GetMilliCPU()+k.milliCPU, requested.GetMemory()+k.memory, len(node.GetPods())+1
	for _, p := range kept {
		cpu, memory, pods = cpu+p.MilliCPU, memory+p.Memory, pods+1
	}
	if !exceeds(cpu, memory, pods) {
		return false
	}
	// Only now is it worth finding which of them the node carries.
	on := make(map[types.UID]bool, len(node.GetPods()))
	for _, pi := range node.GetPods() {
		on[pi.GetPod().UID] = true
	}
	for _, p := range kept {
		if on[p.UID] {
			cpu, memory, pods = cpu-p.MilliCPU, memory-p.Memory, pods-1
		}
	}
	return exceeds(cpu, memory, pods)
}
