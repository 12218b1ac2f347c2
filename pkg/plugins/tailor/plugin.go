// Package tailor is the scheduler plugin that connects kube-scheduler to Tailor's provisioner.
// PostFilter hands pods that fit no node to the provisioner (or nominates the node already being
// launched for them); PreEnqueue keeps such a pod out of the queue until that node exists, and
// PreFilter and Filter hold it to that node until it is up; Score prefers the node the plan put a
// pod on; Reserve and Unreserve keep the provisioner's ledger of pods that are about to bind.
// Every method touches memory only: the scheduling goroutine never waits on I/O.
package tailor

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Name is the plugin's name in the scheduler configuration.
const Name = "Tailor"

// Capacity is the part of Tailor the plugin talks to. Implementations must not block.
type Capacity interface {
	// Enqueue hands a pod that fits no existing node to the provisioner.
	Enqueue(pod *corev1.Pod)
	// Rejected says that a scheduling cycle found no node for pod. refusedOn returns a node as
	// the cycle saw it when the cycle had the node and a plugin other than Tailor's turned the
	// pod away there, and nil otherwise.
	Rejected(pod *corev1.Pod, refusedOn func(node string) *corev1.Node)
	// NominatedNode returns the name of the node being launched for pod, once it is known.
	NominatedNode(pod *corev1.Pod) (string, bool)
	// PlannedNode returns the node a plan put pod on, while the pod is on its way there.
	PlannedNode(pod *corev1.Pod) (string, bool)
	// HeldFor returns the only node pod may bind to while it waits for the node launched for it.
	HeldFor(pod *corev1.Pod) (string, bool)
	// Gate is HeldFor asked by PreEnqueue: the implementation must let the pod back into the
	// queue itself once its hold ends, however it ends (see the provisioner's Gate).
	Gate(pod *corev1.Pod) (string, bool)
	// KeptRoom returns, by node, the room plans keep there for other pending pods that pod may
	// not take, or nil when there is none.
	KeptRoom(pod *corev1.Pod) map[string][]scheduling.Kept
	// Reserve records that the scheduler has assumed pod onto nodeName. It returns false when
	// nodeName is being removed and must take no more pods.
	Reserve(pod *corev1.Pod, nodeName string) bool
	// Unreserve undoes Reserve; it may be called without a matching Reserve.
	Unreserve(pod *corev1.Pod, nodeName string)
}

// Host is the process-wide Tailor runtime: it learns the handle and args of the one profile
// that enables the plugin, and serves as its Capacity.
type Host interface {
	Capacity
	Attach(h fwk.Handle, args *Args) error
}

// Plugin implements PreEnqueue, PreFilter, Filter, PostFilter, PreScore, Score, Reserve and
// Unreserve.
type Plugin struct {
	capacity Capacity
	// snapshot is the scheduler's view of the nodes for the cycle running; nil in tests that
	// build a Plugin by hand.
	snapshot fwk.SharedLister
	// nodes is the scheduler's node informer, for PreEnqueue, which runs outside any cycle; nil
	// in tests that build a Plugin by hand.
	nodes corelisters.NodeLister
	// pods is the scheduler's pod informer, for PreFilter to tell a pod on its way that has
	// bound meanwhile (the provisioner's index of kept room lags behind); nil in such tests.
	pods corelisters.PodLister
}

var (
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
	_ fwk.PreFilterPlugin   = (*Plugin)(nil)
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.PostFilterPlugin  = (*Plugin)(nil)
	_ fwk.PreScorePlugin    = (*Plugin)(nil)
	_ fwk.ScorePlugin       = (*Plugin)(nil)
	_ fwk.ReservePlugin     = (*Plugin)(nil)
)

// NewFactory returns the plugin factory to register with the scheduler. The host is attached to
// the first profile that builds the plugin; a second profile is refused, because one provisioner
// cannot serve two scheduler names with different Filter plugins.
func NewFactory(host Host) frameworkruntime.PluginFactory {
	var once sync.Once
	return func(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		args, err := DecodeArgs(obj)
		if err != nil {
			return nil, err
		}
		attached := false
		once.Do(func() { attached = true })
		if !attached {
			return nil, fmt.Errorf("plugin %s is enabled in more than one profile; enable it in one", Name)
		}
		if err := host.Attach(h, args); err != nil {
			return nil, err
		}
		pl := &Plugin{capacity: host, snapshot: h.SnapshotSharedLister()}
		if f := h.SharedInformerFactory(); f != nil {
			pl.nodes = f.Core().V1().Nodes().Lister()
			pl.pods = f.Core().V1().Pods().Lister()
		}
		return pl, nil
	}
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// heldKey is where PreFilter leaves, for Filter, the node a held pod waits for.
const heldKey fwk.StateKey = Name + "/held"

// heldNode is the node the pod of this cycle waits for.
type heldNode string

// Clone returns the value itself: a string is immutable.
func (h heldNode) Clone() fwk.StateData { return h }

// waitsMessage is Filter's answer on the nodes a held pod may not take; one sentence for every
// node, so that the scheduler's FailedScheduling event counts them in one line.
const waitsMessage = "the pod waits for the node Tailor launched for it"

// PreFilter holds a pod to the node a plan launched for it, while that node is on its way (see
// the provisioner's HeldFor). Any other pod is kept off the room kept for pods on their way to a
// node (KeptRoom); when there is none, the common case, Filter is skipped. Filter, not a
// PreFilterResult, does the holding: a result naming a node that does not exist yet would make
// the scheduler report the pod as fitting no node for an unnamed reason.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if node, ok := p.capacity.HeldFor(pod); ok {
		state.Write(heldKey, heldNode(node))
		return nil, nil
	}
	// A DaemonSet's pod goes to its one node or nowhere, and the plan counted it there.
	if scheduling.IsDaemonSetPod(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if kept := p.capacity.KeptRoom(pod); len(kept) > 0 {
		room := newKeptRoom(pod, kept)
		room.exclusions(p.nodeInfoIn(nodes), p.boundElsewhere)
		state.Write(keptKey, room)
		return nil, nil
	}
	return nil, fwk.NewStatus(fwk.Skip)
}

// nodeInfoIn finds a node of the cycle by name: in the scheduler's snapshot, or, where the plugin
// has none (tests), among the nodes PreFilter was given.
func (p *Plugin) nodeInfoIn(nodes []fwk.NodeInfo) func(string) fwk.NodeInfo {
	if p.snapshot != nil {
		return func(name string) fwk.NodeInfo {
			ni, err := p.snapshot.NodeInfos().Get(name)
			if err != nil {
				return nil
			}
			return ni
		}
	}
	return func(name string) fwk.NodeInfo {
		for _, ni := range nodes {
			if ni.Node() != nil && ni.Node().Name == name {
				return ni
			}
		}
		return nil
	}
}

// boundElsewhere says whether pod, on its way to node by the provisioner's index, is bound to
// another node by the scheduler's informer, or gone: the index lags behind by up to a round.
func (p *Plugin) boundElsewhere(pod *corev1.Pod, node string) bool {
	if p.pods == nil {
		return false
	}
	now, err := p.pods.Pods(pod.Namespace).Get(pod.Name)
	return err != nil || now.UID != pod.UID || (now.Spec.NodeName != "" && now.Spec.NodeName != node)
}

// PreFilterExtensions returns nil: the hold does not depend on the other pods of a node, and the
// kept room reads them from the node Filter is given. The domains a pod on its way bars are read
// once, in PreFilter, from the snapshot: a nominated pod or a preemption's victim that the
// scheduler adds to or takes off a node during the cycle does not move them, and neither would
// it move the pod on its way, which is on no node yet.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter refuses a held pod every node but the one it waits for. The refusal is unresolvable:
// preempting pods elsewhere would not make the pod take that node. It refuses any other pod a
// node whose room it would take from pods on their way there, as NodeResourcesFit refuses it a
// node that nominated pods fill: resolvable, since preempting pods there may make room. A node in
// a domain a pod on its way bars (keptRoom.repels) is refused as unresolvable: the pod that bars
// it is on no node yet, so no victim on this one could lift it.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	if data, err := state.Read(heldKey); err == nil {
		if n := node.Node(); n != nil && n.Name == string(data.(heldNode)) {
			return nil
		}
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waitsMessage)
	}
	if data, err := state.Read(keptKey); err == nil && node.Node() != nil {
		kept := data.(*keptRoom)
		if kept.refuses(node) {
			return fwk.NewStatus(fwk.Unschedulable, keptMessage)
		}
		if kept.repels(node) {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, repelledMessage)
		}
	}
	return nil
}

// EventsToRegister says which events may let a pod the plugin refused be scheduled: a node
// added, changed or deleted. Without it the scheduler would retry a held pod on every event of
// every kind, each time running every Filter on every node for nothing. The provisioner activates
// held pods itself when their claim initializes or goes away (nothing the scheduler watches), and
// a pod Reserve refused, when its node reopens.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{{
		Event:          fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.Update | fwk.Delete},
		QueueingHintFn: p.heldNodeChanged,
	}}, nil
}

// heldNodeChanged queues a pod when the event is about the node it waits for, or when it waits
// for none any more.
func (p *Plugin) heldNodeChanged(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	held, ok := p.capacity.HeldFor(pod)
	if !ok {
		return fwk.Queue, nil
	}
	if n, isNode := newObj.(*corev1.Node); isNode && n.Name == held {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// PostFilter runs after DefaultPreemption found no victims. Whether the pod is handed over does
// not depend on the node status codes: whether the pod failed as Unschedulable or
// UnschedulableAndUnresolvable on existing nodes, new capacity may still hold it, and the
// provisioner decides. The statuses only tell the provisioner which nodes launched for the pod
// refused it (Rejected).
func (p *Plugin) PostFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	p.capacity.Rejected(pod, p.refusedOn(statuses))
	if node, ok := p.capacity.NominatedNode(pod); ok {
		// Capacity is on its way: keep its room for this pod and wait for the node.
		return framework.NewPostFilterResultWithNominatedNode(node), fwk.NewStatus(fwk.Success)
	}
	p.capacity.Enqueue(pod)
	return nil, fwk.NewStatus(fwk.Unschedulable, "waiting for Tailor to provision capacity")
}

// refusedOn returns, for PostFilter, the nodes of the cycle's snapshot, as the cycle saw them,
// on which a plugin other than Tailor's turned the pod away: that includes a PreFilter that
// turned it away everywhere, and excludes Tailor's own Filter, which only holds the pod for
// another node and says nothing of this one.
func (p *Plugin) refusedOn(statuses fwk.NodeToStatusReader) func(string) *corev1.Node {
	return func(name string) *corev1.Node {
		if p.snapshot == nil || statuses == nil {
			return nil
		}
		ni, err := p.snapshot.NodeInfos().Get(name)
		if err != nil || ni.Node() == nil {
			return nil
		}
		if s := statuses.Get(name); s == nil || s.IsSuccess() || s.Plugin() == Name {
			return nil
		}
		return ni.Node()
	}
}

// plannedKey is where PreScore leaves the planned node for Score in the cycle state.
const plannedKey fwk.StateKey = Name + "/planned"

// plannedNode is the node a plan put the pod of this cycle on.
type plannedNode string

// Clone returns the value itself: a string is immutable.
func (p plannedNode) Clone() fwk.StateData { return p }

// PreScore looks up the pod's plan once a cycle. A pod with none (every pod that fits an existing
// node, the common case) skips Score on every node: the scheduler's own scores alone decide, and
// Tailor costs the cycle one map lookup instead of one per feasible node.
func (p *Plugin) PreScore(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	planned, ok := p.capacity.PlannedNode(pod)
	if !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	state.Write(plannedKey, plannedNode(planned))
	return nil
}

// Score ranks the node a plan put the pod on above every other feasible node. The plan packed a
// batch onto nodes as a whole; the scheduler's own scoring spreads pods, and pods it spread onto
// the room planned for others leave those others without room, and new capacity is launched for
// them. Nominations (status.nominatedNodeName) keep the plan too, but are API writes that a burst
// may outrun; this is memory, and holds from the first cycle. A configuration that enables Score
// without PreScore still works: the plan is then looked up for each node.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) (int64, *fwk.Status) {
	if node.Node() == nil {
		return 0, nil
	}
	var planned string
	if data, err := state.Read(plannedKey); err == nil {
		planned = string(data.(plannedNode))
	} else if name, ok := p.capacity.PlannedNode(pod); ok {
		planned = name
	}
	if planned != "" && node.Node().Name == planned {
		return fwk.MaxScore, nil
	}
	return 0, nil
}

// ScoreExtensions returns nil: scores are 0 or the maximum already.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve books the pod against the capacity Tailor planned for it. It rejects a node that the
// disruption loop is removing: that loop decided from the pods it could see, and a pod that the
// scheduler assumed onto the node in the same instant, from a snapshot taken before the node was
// tainted, would otherwise be bound there and then evicted with no room planned for it. The
// scheduler unreserves the pod and retries it; the queue brings it back on the next node event.
func (p *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	if !p.capacity.Reserve(pod, nodeName) {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("node %s is being removed by Tailor's disruption loop", nodeName))
	}
	return nil
}

// Unreserve undoes Reserve when binding fails.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) {
	p.capacity.Unreserve(pod, nodeName)
}
