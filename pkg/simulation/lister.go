package simulation

import (
	"slices"
	"sync"
	"sync/atomic"

	fwk "k8s.io/kube-scheduler/framework"
)

// swappableLister is the SharedLister the Simulator's frameworks read: what Use showed them last,
// the framework's nodes and then the planned ones.
type swappableLister struct {
	current atomic.Pointer[view]
	// tail lists a Snapshot's nodes and then planned ones, for views of that Snapshot to share.
	tail tail
}

// tail is the longest list of a Snapshot's nodes followed by planned ones handed out so far, with
// room to grow. A planner shows one more claim at a time: a view whose planned nodes extend the
// tail's appends them in place and shares the list, where copying every node of the Snapshot per
// plan was the largest thing a plan allocated on a large fleet. Every list handed out is a prefix
// of the tail, and only positions past the tail's length are written, so no list handed out
// changes while it may be read. A view that does not extend the tail starts a new one.
//
// Lists are read only while the Snapshot's fork that was innermost when they were handed out is
// open (a plan forks the Snapshot, shows its views inside, and reverts it before it returns):
// once that fork is closed, the tail starts again after the Snapshot's nodes, in the same memory.
type tail struct {
	mu       sync.Mutex
	snapshot *Snapshot
	// fork is the Snapshot's innermost open fork when the tail started, nil when none was open.
	fork  *layer
	nodes []fwk.NodeInfo
}

// extend returns s's nodes (base, which never changes for s) followed by planned.
func (t *tail) extend(s *Snapshot, base, planned []fwk.NodeInfo) []fwk.NodeInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.snapshot == s && t.fork != nil && !slices.Contains(s.layers, t.fork) {
		t.nodes, t.fork = t.nodes[:len(base)], s.innermost()
	}
	n, shown := len(base)+len(planned), len(t.nodes)-len(base)
	if t.snapshot == s && shown >= 0 && shown <= len(planned) && n <= cap(t.nodes) && slices.Equal(t.nodes[len(base):], planned[:shown]) {
		t.nodes = append(t.nodes, planned[shown:]...)
		return t.nodes
	}
	// Room for as many claims again as are shown, and a few more, before the next copy.
	t.snapshot, t.fork = s, s.innermost()
	t.nodes = append(append(make([]fwk.NodeInfo, 0, n+len(planned)+16), base...), planned...)
	return t.nodes
}

type view struct {
	snapshot fwk.SharedLister
	planned  []fwk.NodeInfo
	// tail, when set, extends the lists of views of an own Snapshot (see tail).
	tail *tail
	// all lists the snapshot's nodes and then the planned ones, built on first use: a PreFilter
	// pass asks for it more than once. same, when set, is an earlier view of the same nodes,
	// whose list this one answers with.
	same *view
	once sync.Once
	all  []fwk.NodeInfo
	err  error
}

func (v *view) list() ([]fwk.NodeInfo, error) {
	if v.same != nil {
		return v.same.list()
	}
	v.once.Do(func() {
		base, err := v.snapshot.NodeInfos().List()
		if err != nil || len(v.planned) == 0 {
			v.all, v.err = base, err
			return
		}
		if own, ok := v.snapshot.(*Snapshot); ok && v.tail != nil {
			v.all = v.tail.extend(own, base, v.planned)
			return
		}
		v.all = append(append(make([]fwk.NodeInfo, 0, len(base)+len(v.planned)), base...), v.planned...)
	})
	return v.all, v.err
}

// Set shows the framework s's nodes and then the planned ones. A planner shows the same nodes
// again and again, once per pod, and listing them copies every node of s: a view of a Snapshot
// (whose list never changes; its nodes change in place) and the same planned nodes as the
// current view's shares the current view's list instead.
func (l *swappableLister) Set(s fwk.SharedLister, planned []fwk.NodeInfo) {
	v := &view{snapshot: s, planned: planned, tail: &l.tail}
	if cur := l.current.Load(); cur != nil && len(planned) > 0 && cur.snapshot == s && slices.Equal(cur.planned, planned) {
		if _, own := s.(*Snapshot); own {
			v.same = cur
			if cur.same != nil {
				v.same = cur.same
			}
		}
	}
	l.current.Store(v)
}

func (l *swappableLister) NodeInfos() fwk.NodeInfoLister {
	v := l.current.Load()
	return nodeInfos{base: v.snapshot.NodeInfos(), view: v}
}

func (l *swappableLister) StorageInfos() fwk.StorageInfoLister {
	v := l.current.Load()
	return storageInfos{base: v.snapshot.StorageInfos(), planned: v.planned}
}

// storageInfos counts the PVCs of the planned nodes' pods as used, as the snapshot counts its
// own: ReadWriteOncePod lets one pod use a claim, wherever that pod is planned.
type storageInfos struct {
	base    fwk.StorageInfoLister
	planned []fwk.NodeInfo
}

func (s storageInfos) IsPVCUsedByPods(key string) bool {
	if s.base.IsPVCUsedByPods(key) {
		return true
	}
	for _, ni := range s.planned {
		if ni.GetPVCRefCounts()[key] > 0 {
			return true
		}
	}
	return false
}

func (l *swappableLister) PodGroupStates() fwk.PodGroupStateLister {
	return l.current.Load().snapshot.PodGroupStates()
}

// nodeInfos lists the snapshot's nodes and then the planned ones. The lists of nodes with
// affinity pods are derived from the NodeInfos as they are now, not as the snapshot indexed them
// when it was built: callers add pods to its NodeInfos while they plan.
type nodeInfos struct {
	base fwk.NodeInfoLister
	view *view
}

func (n nodeInfos) List() ([]fwk.NodeInfo, error) { return n.view.list() }

func (n nodeInfos) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	if own, ok := n.base.(*snapshotNodes); ok {
		base, _ := own.HavePodsWithAffinityList()
		return n.withPlanned(base, hasAffinity), nil
	}
	return n.having(hasAffinity)
}

func (n nodeInfos) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	if own, ok := n.base.(*snapshotNodes); ok {
		base, _ := own.HavePodsWithRequiredAntiAffinityList()
		return n.withPlanned(base, hasRequiredAntiAffinity), nil
	}
	return n.having(hasRequiredAntiAffinity)
}

// withPlanned is base, a Snapshot's list kept up to date as its nodes change, followed by the
// planned nodes for which keep holds: what having returns, without a walk over every node.
func (n nodeInfos) withPlanned(base []fwk.NodeInfo, keep func(fwk.NodeInfo) bool) []fwk.NodeInfo {
	out := slices.Clip(base)
	for _, ni := range n.view.planned {
		if keep(ni) {
			out = append(out, ni)
		}
	}
	return out
}

func (n nodeInfos) having(keep func(fwk.NodeInfo) bool) ([]fwk.NodeInfo, error) {
	all, err := n.List()
	if err != nil {
		return nil, err
	}
	var out []fwk.NodeInfo
	for _, ni := range all {
		if keep(ni) {
			out = append(out, ni)
		}
	}
	return out, nil
}

func (n nodeInfos) Get(name string) (fwk.NodeInfo, error) {
	for _, ni := range n.view.planned {
		if ni.Node() != nil && ni.Node().Name == name {
			return ni, nil
		}
	}
	return n.base.Get(name)
}
