package simulation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Snapshot is a cluster that many simulations ask in turn: nodes and the pods on them, built once.
// A simulation that changes it (a node taken away, pods placed) first calls Fork, and Revert
// afterwards puts every node it touched back as it was, so the next simulation starts from the
// same cluster without rebuilding it. Commit keeps a fork's changes instead. Forks nest.
//
// Building a snapshot parses every pod (requests, affinity terms, ports); a fork costs only the
// nodes it touches, each copied once, when first changed. That is Cluster Autoscaler's
// clustersnapshot Fork/Revert/Commit, over the scheduler framework's own NodeInfos.
//
// It answers the framework's listers as a schedcache.Snapshot built from the same pods and nodes
// would, with the changes of the open forks applied, and lists nodes by name. As in the
// scheduler's snapshot, a PVC counts as used by the bound pods the snapshot was built with (less
// those on nodes a fork took away), not by pods placed later.
type Snapshot struct {
	// sorted and byName hold the same NodeInfos, changed in place (see layer); position is each
	// node's place in sorted.
	sorted   []fwk.NodeInfo
	byName   map[string]*framework.NodeInfo
	position map[string]int
	// room, affinity and antiAffinity answer NextWithRoom and the lists of nodes with affinity
	// pods, built on first use and kept up to date (snapshotindex.go).
	room                   *roomTree
	affinity, antiAffinity *nodeList
	// groups are the pod group states of pods.
	groups fwk.PodGroupStateLister
	// pods are those the snapshot was built with, to rebuild pod group states when a fork removes
	// one of a group; see PodGroupStates.
	pods []*corev1.Pod
	// pvcs counts, per PVC key, the bound pods using it.
	pvcs   map[string]int
	layers []*layer
}

// layer is one open fork: the nodes it changed, each as it was before the first change.
type layer struct {
	saved map[*framework.NodeInfo]*framework.NodeInfo
	// removed are the pods of nodes taken away in this fork.
	removed     []*corev1.Pod
	groupsMoved bool
}

// NewSnapshot builds a snapshot of nodes with pods on them (by spec.nodeName). Every pod's node
// must be among nodes.
func NewSnapshot(pods []*corev1.Pod, nodes []*corev1.Node) (*Snapshot, error) {
	built := schedcache.NewSnapshot(pods, nodes)
	s := &Snapshot{groups: built.PodGroupStates(), pods: pods, pvcs: map[string]int{},
		byName: make(map[string]*framework.NodeInfo, len(nodes))}
	listed, _ := built.NodeInfos().List()
	for _, ni := range listed {
		if ni.Node() == nil {
			p := ni.GetPods()[0].GetPod()
			return nil, fmt.Errorf("building the simulation snapshot: pod %s/%s is bound to node %q, which is not in the snapshot", p.Namespace, p.Name, p.Spec.NodeName)
		}
		info, ok := ni.(*framework.NodeInfo)
		if !ok {
			return nil, fmt.Errorf("building the simulation snapshot: node %s has a NodeInfo of type %T", ni.Node().Name, ni)
		}
		s.byName[ni.Node().Name] = info
	}
	s.sorted = slices.SortedFunc(slices.Values(listed), func(a, b fwk.NodeInfo) int { return strings.Compare(a.Node().Name, b.Node().Name) })
	s.position = make(map[string]int, len(s.sorted))
	for i, ni := range s.sorted {
		s.position[ni.Node().Name] = i
	}
	for _, p := range pods {
		s.countPVCs(p, 1)
	}
	return s, nil
}

// Fork opens a layer of changes that Revert undoes and Commit keeps.
func (s *Snapshot) Fork() {
	s.layers = append(s.layers, &layer{saved: map[*framework.NodeInfo]*framework.NodeInfo{}})
}

// Revert undoes every change since the last Fork and closes it.
func (s *Snapshot) Revert() {
	top := s.pop()
	for now, was := range top.saved {
		*now = *was
		s.touched(s.position[now.Node().Name])
	}
	for _, p := range top.removed {
		s.countPVCs(p, 1)
	}
}

// Commit keeps the changes since the last Fork and closes it: they become part of the layer
// below, or of the snapshot itself when it was the only one.
func (s *Snapshot) Commit() {
	top := s.pop()
	if len(s.layers) == 0 {
		gone := podSet(top.removed)
		s.pods = slices.DeleteFunc(slices.Clone(s.pods), func(p *corev1.Pod) bool { return gone[p] })
		if top.groupsMoved {
			s.groups = schedcache.NewSnapshot(s.pods, nil).PodGroupStates()
		}
		return
	}
	below := s.layers[len(s.layers)-1]
	for now, was := range top.saved {
		// A node the layer below had not touched was, when this layer opened, as it was when
		// the layer below opened.
		if _, ok := below.saved[now]; !ok {
			below.saved[now] = was
		}
	}
	below.removed = append(below.removed, top.removed...)
	below.groupsMoved = below.groupsMoved || top.groupsMoved
}

// innermost is the innermost open fork, nil when none is open.
func (s *Snapshot) innermost() *layer {
	if len(s.layers) == 0 {
		return nil
	}
	return s.layers[len(s.layers)-1]
}

func (s *Snapshot) pop() *layer {
	if len(s.layers) == 0 {
		panic("simulation.Snapshot: Revert or Commit without Fork")
	}
	top := s.layers[len(s.layers)-1]
	s.layers = s.layers[:len(s.layers)-1]
	return top
}

// writable returns the node's NodeInfo to change in place, saving it first in the open fork.
func (s *Snapshot) writable(ni fwk.NodeInfo) (*framework.NodeInfo, bool) {
	if ni.Node() == nil {
		return nil, false
	}
	info, ok := s.byName[ni.Node().Name]
	if !ok || fwk.NodeInfo(info) != ni {
		return nil, false
	}
	if len(s.layers) > 0 {
		top := s.layers[len(s.layers)-1]
		if _, saved := top.saved[info]; !saved {
			top.saved[info] = info.SnapshotConcrete()
		}
	}
	// The caller changes the node next: the indexes read it again at their next question.
	s.touched(s.position[info.Node().Name])
	return info, true
}

// AddPod counts pod on ni, one of the snapshot's nodes, as the scheduler counts a pod it assumed;
// or on any other NodeInfo (a node the caller plans, not in the snapshot) directly.
func (s *Snapshot) AddPod(ni fwk.NodeInfo, pod *corev1.Pod) {
	// The error is the scheduler's to ignore too (framework.NodeInfo.AddPod): an affinity term
	// the API server let through that does not parse counts as none.
	info, _ := framework.NewPodInfo(pod)
	s.AddPodInfo(ni, info)
}

// AddPodInfo is AddPod with the pod's PodInfo, which the node keeps: a caller that has one
// already (a planner, which made it for PreFilter) spares the node parsing the pod again.
func (s *Snapshot) AddPodInfo(ni fwk.NodeInfo, pod fwk.PodInfo) {
	if info, ok := s.writable(ni); ok {
		info.AddPodInfo(pod)
		return
	}
	if info, ok := ni.(*framework.NodeInfo); ok {
		info.AddPodInfo(pod)
	}
}

// Replace makes the snapshot's node of that name node, with no pods: what a simulation of
// removing the node shows in its place. It must be called inside a fork.
func (s *Snapshot) Replace(node *corev1.Node) error {
	info, ok := s.byName[node.Name]
	if !ok {
		return fmt.Errorf("replacing node %s in the simulation snapshot: no such node", node.Name)
	}
	if len(s.layers) == 0 {
		return fmt.Errorf("replacing node %s in the simulation snapshot: not inside a fork", node.Name)
	}
	info, _ = s.writable(info)
	top := s.layers[len(s.layers)-1]
	for _, p := range info.GetPods() {
		pod := p.GetPod()
		top.removed = append(top.removed, pod)
		top.groupsMoved = top.groupsMoved || pod.Spec.SchedulingGroup != nil
		s.countPVCs(pod, -1)
	}
	images := info.ImageStates
	fresh := framework.NewNodeInfo()
	fresh.SetNode(node)
	fresh.ImageStates = images
	*info = *fresh
	return nil
}

func (s *Snapshot) countPVCs(p *corev1.Pod, by int) {
	if p.Spec.NodeName == "" {
		return
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			key := framework.GetNamespacedName(p.Namespace, v.PersistentVolumeClaim.ClaimName)
			if s.pvcs[key] += by; s.pvcs[key] <= 0 {
				delete(s.pvcs, key)
			}
		}
	}
}

// NodeInfos lists the nodes by name.
func (s *Snapshot) NodeInfos() fwk.NodeInfoLister { return (*snapshotNodes)(s) }

// StorageInfos answers which PVCs bound pods use.
func (s *Snapshot) StorageInfos() fwk.StorageInfoLister { return (*snapshotStorage)(s) }

// PodGroupStates are those of the pods the snapshot was built with, less those on nodes an open
// fork took away.
func (s *Snapshot) PodGroupStates() fwk.PodGroupStateLister {
	moved := false
	var removed []*corev1.Pod
	for _, l := range s.layers {
		moved = moved || l.groupsMoved
		removed = append(removed, l.removed...)
	}
	if !moved {
		return s.groups
	}
	gone := podSet(removed)
	var kept []*corev1.Pod
	for _, p := range s.pods {
		if !gone[p] && p.Spec.SchedulingGroup != nil {
			kept = append(kept, p)
		}
	}
	return schedcache.NewSnapshot(kept, nil).PodGroupStates()
}

func podSet(pods []*corev1.Pod) map[*corev1.Pod]bool {
	out := make(map[*corev1.Pod]bool, len(pods))
	for _, p := range pods {
		out[p] = true
	}
	return out
}

type snapshotNodes Snapshot

func (n *snapshotNodes) List() ([]fwk.NodeInfo, error) { return n.sorted, nil }

// HavePodsWithAffinityList and HavePodsWithRequiredAntiAffinityList list, in name order, the
// nodes that hold such pods now. The slices are shared between calls: callers must not change
// them (InterPodAffinity only reads them).
func (n *snapshotNodes) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	if n.affinity == nil {
		n.affinity = newNodeList(n.sorted, hasAffinity)
	}
	return n.affinity.list(n.sorted), nil
}

func (n *snapshotNodes) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	if n.antiAffinity == nil {
		n.antiAffinity = newNodeList(n.sorted, hasRequiredAntiAffinity)
	}
	return n.antiAffinity.list(n.sorted), nil
}

func (n *snapshotNodes) Get(name string) (fwk.NodeInfo, error) {
	if ni, ok := n.byName[name]; ok {
		return ni, nil
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", name)
}

type snapshotStorage Snapshot

func (st *snapshotStorage) IsPVCUsedByPods(key string) bool { return st.pvcs[key] > 0 }
