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
}

// Clone returns the value itself: the cycle never changes it.
func (k *keptRoom) Clone() fwk.StateData { return k }

// keptMessage is Filter's answer on a node whose free room is kept for others.
const keptMessage = "the room left on the node is kept for the pods Tailor launched it for"

func newKeptRoom(pod *corev1.Pod, byNode map[string][]scheduling.Kept) *keptRoom {
	r := scheduling.PodRequests(pod)
	return &keptRoom{byNode: byNode, milliCPU: r.Cpu().MilliValue(), memory: r.Memory().Value()}
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
