package tailor

import (
	"slices"

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
	excludes func(other *corev1.Pod) []string
	// barred are the topology domains the pod may not join while pods on their way there are
	// not on their nodes yet (see exclusions), and barredKeys their keys, each once.
	barred     map[domain]bool
	barredKeys []string
}

// domain is one value of one topology key: a zone, a host.
type domain struct{ key, value string }

// Clone returns the value itself: the cycle never changes it.
func (k *keptRoom) Clone() fwk.StateData { return k }

// keptMessage is Filter's answer on a node whose free room is kept for others.
const keptMessage = "the room left on the node is kept for the pods Tailor launched it for"

// repelledMessage is Filter's answer on a node where the pod and a pod on its way there exclude
// each other.
const repelledMessage = "a pod on its way to a node Tailor launched excludes this pod from the node's topology domain by required anti-affinity, or this pod excludes it"

func newKeptRoom(pod *corev1.Pod, byNode map[string][]scheduling.Kept) *keptRoom {
	r := scheduling.PodRequests(pod)
	return &keptRoom{byNode: byNode, milliCPU: r.Cpu().MilliValue(), memory: r.Memory().Value(), pod: pod, excludes: ExcluderOf(pod)}
}

// ExcluderOf is scheduling.Kept.Excludes for pod: the topology keys by which its required
// anti-affinity, parsed once as the scheduler parses it, excludes another pod from the domain of
// the node pod is on. It is nil when pod has no such terms (or they do not parse: the scheduler
// then refuses pod itself). A term with a namespaceSelector that is not empty is left out: it
// selects by the labels of the other pod's namespace, which are not read here, so the scheduler
// alone weighs it: no such term bars a domain.
func ExcluderOf(pod *corev1.Pod) func(other *corev1.Pod) []string {
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
	return func(other *corev1.Pod) []string {
		var keys []string
		for i := range terms {
			if terms[i].Matches(other, nil) {
				keys = append(keys, terms[i].TopologyKey)
			}
		}
		return keys
	}
}

// exclusions finds the topology domains the pod and pods on their way to a node exclude each other
// from by required anti-affinity, in either direction, as InterPodAffinity would once the pod on
// its way is on its node: the domains of that node. The scheduler weighs that only for pods on a
// node, and for pods nominated to the very node it filters, and a nomination is written after the
// plan: a pod with no plan (refused everywhere for that very exclusion) would otherwise take the
// node launched for the pod that excludes it, or another of its zone, and that pod could then
// never join its zone. A pod on its way that is on its node already (assumed, bound) is the
// scheduler's to weigh, and so is one whose node is not in the cycle's snapshot (it has not
// registered: no pod can go there or learn its labels yet), or one the scheduler has bound
// elsewhere meanwhile (boundElsewhere). nodeInfo finds a node of the cycle. It sets barred and
// barredKeys.
func (k *keptRoom) exclusions(nodeInfo func(name string) fwk.NodeInfo, boundElsewhere func(pod *corev1.Pod, node string) bool) {
	for name, kept := range k.byNode {
		var ni fwk.NodeInfo
		var on map[types.UID]bool
		for _, p := range kept {
			// p may be the pod itself, listed on a node its plan has just moved it off (the
			// index is up to keptFresh old): the scheduler does not weigh a pod against itself.
			if p.Pod == nil || p.UID == k.pod.UID || (p.Excludes == nil && k.excludes == nil) {
				continue
			}
			var keys []string
			if p.Excludes != nil {
				keys = p.Excludes(k.pod)
			}
			if k.excludes != nil {
				keys = append(keys, k.excludes(p.Pod)...)
			}
			if len(keys) == 0 {
				continue
			}
			if on == nil {
				if ni = nodeInfo(name); ni == nil || ni.Node() == nil {
					break
				}
				on = make(map[types.UID]bool, len(ni.GetPods()))
				for _, pi := range ni.GetPods() {
					on[pi.GetPod().UID] = true
				}
			}
			if on[p.UID] || boundElsewhere(p.Pod, name) {
				continue
			}
			for _, key := range keys {
				v, ok := ni.Node().Labels[key]
				if !ok || k.barred[domain{key, v}] {
					continue
				}
				if k.barred == nil {
					k.barred = map[domain]bool{}
				}
				if !slices.Contains(k.barredKeys, key) {
					k.barredKeys = append(k.barredKeys, key)
				}
				k.barred[domain{key, v}] = true
			}
		}
	}
}

// repels returns whether node is in a domain the pod may not join (exclusions). A kept pod the
// node carries as a nomination is the scheduler's to weigh on that node in its first Filter pass,
// which adds the nominated pods; in its second, without them, this answers as InterPodAffinity
// did.
func (k *keptRoom) repels(node fwk.NodeInfo) bool {
	labels := node.Node().Labels
	for _, key := range k.barredKeys {
		if v, ok := labels[key]; ok && k.barred[domain{key, v}] {
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
