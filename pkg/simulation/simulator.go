// Package simulation answers "does this pod fit on that node?" outside the scheduler's own cycle,
// with the very Filter plugins of the scheduler profile, over a snapshot that the caller builds.
// The planner asks it about template nodes (instance types that could be launched) and about
// NodeClaims in flight; nothing here re-implements a Filter.
package simulation

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Simulator runs a private framework instance built from a scheduler profile. Its snapshot is
// swapped per question, so it never reads the scheduler's own snapshot off-cycle.
type Simulator struct {
	fw       framework.Framework
	snapshot *swappableLister
}

// New builds a Simulator from the scheduler's profile and the handle the scheduler gave to
// Tailor's plugin, with the scheduler's parallelism, sharing the handle's informers, DRA and CSI managers. Plugins named in
// exclude (Tailor's own) are left out, and PostFilter is disabled: preemption is the scheduler's
// business, not the simulation's.
func New(ctx context.Context, profile *config.KubeSchedulerProfile, h fwk.Handle, parallelism int, exclude ...string) (*Simulator, error) {
	p := profile.DeepCopy()
	drop := sets.New(exclude...)
	for _, set := range pluginSets(p.Plugins) {
		set.Enabled = withoutNames(set.Enabled, drop)
	}
	p.Plugins.PostFilter.Disabled = append(p.Plugins.PostFilter.Disabled, config.Plugin{Name: "*"})
	var args []config.PluginConfig
	for _, pc := range p.PluginConfig {
		if !drop.Has(pc.Name) {
			args = append(args, pc)
		}
	}
	p.PluginConfig = args

	lister := &swappableLister{}
	lister.Set(schedcache.NewSnapshot(nil, nil))
	fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), p,
		frameworkruntime.WithClientSet(h.ClientSet()),
		frameworkruntime.WithKubeConfig(h.KubeConfig()),
		frameworkruntime.WithEventRecorder(h.EventRecorder()),
		frameworkruntime.WithInformerFactory(h.SharedInformerFactory()),
		frameworkruntime.WithSharedDRAManager(h.SharedDRAManager()),
		frameworkruntime.WithSharedCSIManager(h.SharedCSIManager()),
		frameworkruntime.WithSnapshotSharedLister(lister),
		frameworkruntime.WithParallelism(parallelism),
		frameworkruntime.WithLogger(klog.FromContext(ctx).WithName("simulation")),
	)
	if err != nil {
		return nil, fmt.Errorf("building the simulation framework for profile %q: %w", profile.SchedulerName, err)
	}
	return &Simulator{fw: fw, snapshot: lister}, nil
}

// Parallelizer runs work in parallel with the profile's parallelism.
func (s *Simulator) Parallelizer() fwk.Parallelizer { return s.fw.Parallelizer() }

// Use makes the simulator see these nodes and pods until the next call. Callers serialise their
// questions: one planner owns a Simulator.
func (s *Simulator) Use(snapshot *schedcache.Snapshot) { s.snapshot.Set(snapshot) }

// PreFilter prepares the cycle state for pod against the current snapshot. A nil status means the
// pod may fit somewhere; the result may limit the nodes it can go to.
func (s *Simulator) PreFilter(ctx context.Context, pod *corev1.Pod) (fwk.CycleState, *fwk.PreFilterResult, *fwk.Status) {
	state := framework.NewCycleState()
	res, status, _ := s.fw.RunPreFilterPlugins(ctx, state, pod)
	if status.IsSuccess() {
		return state, res, nil
	}
	return state, res, status
}

// Filter runs every Filter plugin for pod on node, with the state that PreFilter prepared.
// The state is not modified, so callers may share it between goroutines.
func (s *Simulator) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	return s.fw.RunFilterPlugins(ctx, state, pod, node)
}

// AddPod tells the PreFilter state of podToSchedule that added now runs on node, so that
// affinity and spread see pods placed earlier in the same plan.
func (s *Simulator) AddPod(ctx context.Context, state fwk.CycleState, podToSchedule *corev1.Pod, added fwk.PodInfo, node fwk.NodeInfo) *fwk.Status {
	return s.fw.RunPreFilterExtensionAddPod(ctx, state, podToSchedule, added, node)
}

type swappableLister struct {
	current atomic.Pointer[schedcache.Snapshot]
}

func (l *swappableLister) Set(s *schedcache.Snapshot)    { l.current.Store(s) }
func (l *swappableLister) NodeInfos() fwk.NodeInfoLister { return l.current.Load().NodeInfos() }
func (l *swappableLister) StorageInfos() fwk.StorageInfoLister {
	return l.current.Load().StorageInfos()
}
func (l *swappableLister) PodGroupStates() fwk.PodGroupStateLister {
	return l.current.Load().PodGroupStates()
}

func pluginSets(p *config.Plugins) []*config.PluginSet {
	return []*config.PluginSet{&p.PreEnqueue, &p.QueueSort, &p.PreFilter, &p.Filter, &p.PostFilter,
		&p.PreScore, &p.Score, &p.Reserve, &p.Permit, &p.PreBind, &p.Bind, &p.PostBind, &p.MultiPoint,
		&p.PlacementGenerate, &p.PlacementScore}
}

func withoutNames(in []config.Plugin, drop sets.Set[string]) []config.Plugin {
	out := in[:0:0]
	for _, p := range in {
		if !drop.Has(p.Name) {
			out = append(out, p)
		}
	}
	return out
}
