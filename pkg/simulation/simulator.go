// Package simulation answers "does this pod fit on that node?" outside the scheduler's own cycle,
// with the very Filter plugins of the scheduler profile, over a snapshot that the caller builds.
// The planner asks it about template nodes (instance types that could be launched) and about
// NodeClaims in flight; nothing here re-implements a Filter.
package simulation

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/tailor-sh/tailor/pkg/simulation/dra"
)

// Simulator runs a private framework instance built from a scheduler profile. Its snapshot is
// swapped per question, so it never reads the scheduler's own snapshot off-cycle.
type Simulator struct {
	profile  *config.KubeSchedulerProfile
	fw       framework.Framework
	snapshot *swappableLister
	// nominated are the nominations FilterWithNominated counts; see SetNominated.
	nominated *nominations
	// capacity runs only NodeResourcesFit's Filter and placement every other Filter plugin, over
	// the same snapshot and with the same args, so that a caller can ask the two halves of one
	// Filter pass separately; see FilterCapacity.
	capacity, placement framework.Framework
	// affinity runs only InterPodAffinity's Filter (nil when the profile leaves it out).
	affinity framework.Framework
	// resourcesFiltered: see ResourcesFiltered.
	resourcesFiltered bool
	// spread is the main framework's PodTopologySpread, for SpreadDomains; nil if the profile
	// has none.
	spread fwk.PreFilterPlugin
	// dra is the DRA manager every framework of the simulation reads, with the plan's overlay
	// (see DRA). claims runs only DynamicResources, at PreFilter, Filter and Reserve: Filter,
	// FilterPlacement and ReserveClaims ask it apart, on the view of the node it is to see
	// (filterDevices); devicesApart runs every other Filter plugin. claims is nil, and
	// devicesApart the main framework, when the profile does not run DynamicResources.
	dra          *dra.Manager
	claims       framework.Framework
	devicesApart framework.Framework
	// uncounted runs every PreFilter plugin but the counting ones, and counted are the counting
	// plugins the profile runs at PreFilter (PreFilterLike).
	uncounted framework.Framework
	counted   sets.Set[string]
}

// Deps are what the simulation framework's plugins read besides the snapshot. Inside the
// scheduler they come from its handle (DepsFromHandle); a what-if tool or a unit test builds them
// from any clientset and informer factory, with no scheduler running.
type Deps struct {
	// Client is the clientset plugins are given; the Filter path does not write with it.
	Client kubernetes.Interface
	// KubeConfig may be nil.
	KubeConfig *rest.Config
	// InformerFactory serves the listers plugins read (PVCs, StorageClasses, CSIDrivers, ...).
	// New registers those informers with it, so the caller starts the factory after New (starting
	// it again is fine: Start only runs informers that are not running yet) and waits for it to
	// sync before asking questions.
	InformerFactory informers.SharedInformerFactory
	// DRAManager serves the cluster's ResourceSlices, ResourceClaims and DeviceClasses; the
	// simulation adds the plan's overlay on top (pkg/simulation/dra) and never writes to it. When
	// nil, New builds one over the informer factory, as the scheduler builds its own.
	DRAManager fwk.SharedDRAManager
	// CSIManager may be nil: one is then built over the informer factory's CSINode lister.
	CSIManager fwk.CSIManager
	// EventRecorder may be nil; the Filter path records no events.
	EventRecorder events.EventRecorderLogger
	// Parallelism bounds the goroutines of the simulator's Parallelizer; 0 means the scheduler's
	// default (16).
	Parallelism int
}

// DepsFromHandle returns the dependencies of the scheduler that gave Tailor's plugin h, sharing
// its informers, DRA and CSI managers, with the scheduler's parallelism.
func DepsFromHandle(h fwk.Handle, parallelism int) Deps {
	return Deps{
		Client:          h.ClientSet(),
		KubeConfig:      h.KubeConfig(),
		InformerFactory: h.SharedInformerFactory(),
		DRAManager:      h.SharedDRAManager(),
		CSIManager:      h.SharedCSIManager(),
		EventRecorder:   h.EventRecorder(),
		Parallelism:     parallelism,
	}
}

// DefaultProfile returns kube-scheduler's default profile, completed with its default plugins
// and plugin args as the scheduler's own defaulting leaves them, under schedulerName. It is for
// simulating offline, with no scheduler configuration at hand.
func DefaultProfile(schedulerName string) (*config.KubeSchedulerProfile, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, fmt.Errorf("defaulting the kube-scheduler configuration: %w", err)
	}
	if len(cfg.Profiles) == 0 {
		return nil, fmt.Errorf("the default kube-scheduler configuration has no profile")
	}
	p := cfg.Profiles[0].DeepCopy()
	p.SchedulerName = schedulerName
	return p, nil
}

// New builds a Simulator from a scheduler profile and its dependencies. Plugins named in exclude
// (Tailor's own) are left out, and PostFilter is disabled: preemption is the scheduler's
// business, not the simulation's.
func New(ctx context.Context, profile *config.KubeSchedulerProfile, deps Deps, exclude ...string) (*Simulator, error) {
	if deps.InformerFactory == nil {
		return nil, fmt.Errorf("building the simulation framework for profile %q: no informer factory", profile.SchedulerName)
	}
	if deps.CSIManager == nil {
		deps.CSIManager = nodevolumelimits.NewCSIManager(deps.InformerFactory.Storage().V1().CSINodes().Lister())
	}
	if deps.DRAManager == nil {
		m, err := dra.FromInformers(ctx, deps.Client, deps.InformerFactory)
		if err != nil {
			return nil, fmt.Errorf("building the simulation framework for profile %q: %w", profile.SchedulerName, err)
		}
		deps.DRAManager = m
	}
	overlay := dra.New(deps.DRAManager)
	deps.DRAManager = overlay
	p := simulationProfile(profile, deps, exclude)

	// The framework observes into the scheduler's metrics, which are nil until registered. A
	// running scheduler has registered them; Register is guarded by a sync.Once, so this is a
	// no-op then. (InitMetrics itself is not idempotent: it would replace the scheduler's
	// registered metrics with unregistered ones, so it must not be called here.)
	schedulermetrics.Register()

	lister := &swappableLister{}
	lister.Set(schedcache.NewSnapshot(nil, nil), nil)
	sim := &Simulator{snapshot: lister, profile: p, nominated: &nominations{}, dra: overlay}
	opts := append(frameworkOptions(ctx, deps),
		frameworkruntime.WithSnapshotSharedLister(lister),
		frameworkruntime.WithPodNominator(sim.nominated))
	if err := sim.buildFrameworks(ctx, profile.SchedulerName, opts); err != nil {
		return nil, err
	}
	return sim, nil
}

// simulationProfile is profile without the plugins of exclude, without DynamicResources when
// there is no DRA manager, and without PostFilter.
func simulationProfile(profile *config.KubeSchedulerProfile, deps Deps, exclude []string) *config.KubeSchedulerProfile {
	drop := sets.New(exclude...)
	if deps.DRAManager == nil {
		// DynamicResources calls its DRA manager without a nil check; without one it would panic.
		drop.Insert(names.DynamicResources)
	}
	p := profile.DeepCopy()
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
	return p
}

// frameworkOptions are the options every framework of the simulation is built with, from deps.
func frameworkOptions(ctx context.Context, deps Deps) []frameworkruntime.Option {
	opts := []frameworkruntime.Option{
		frameworkruntime.WithClientSet(deps.Client),
		frameworkruntime.WithKubeConfig(deps.KubeConfig),
		frameworkruntime.WithInformerFactory(deps.InformerFactory),
		frameworkruntime.WithSharedCSIManager(deps.CSIManager),
		frameworkruntime.WithLogger(klog.FromContext(ctx).WithName("simulation")),
	}
	if deps.EventRecorder != nil {
		opts = append(opts, frameworkruntime.WithEventRecorder(deps.EventRecorder))
	}
	if deps.DRAManager != nil {
		opts = append(opts, frameworkruntime.WithSharedDRAManager(deps.DRAManager))
	}
	if deps.Parallelism > 0 {
		opts = append(opts, frameworkruntime.WithParallelism(deps.Parallelism))
	}
	return opts
}

// buildFrameworks builds the simulation's frameworks from its profile: the whole profile, the
// capacity and placement halves of its Filter plugins, and InterPodAffinity alone when the
// profile runs it.
func (s *Simulator) buildFrameworks(ctx context.Context, schedulerName string, opts []frameworkruntime.Option) error {
	registry := plugins.NewInTreeRegistry()
	registry[names.PodTopologySpread] = s.keepSpread(registry[names.PodTopologySpread])
	build := func(p *config.KubeSchedulerProfile) (framework.Framework, error) {
		fw, err := frameworkruntime.NewFramework(ctx, registry, p, opts...)
		if err != nil {
			return nil, fmt.Errorf("building the simulation framework for profile %q: %w", schedulerName, err)
		}
		return fw, nil
	}
	p := s.profile
	var err error
	if s.fw, err = build(p); err != nil {
		return err
	}
	var filters []string
	for _, pl := range s.fw.ListPlugins().Filter.Enabled {
		filters = append(filters, pl.Name)
	}
	s.resourcesFiltered = filtersResources(filters)
	if s.capacity, err = build(withFilters(p, true)); err != nil {
		return err
	}
	s.devicesApart = s.fw
	drops := sets.New(names.NodeResourcesFit)
	if slices.Contains(filters, names.DynamicResources) {
		drops.Insert(names.DynamicResources)
		if s.claims, err = build(withReserve(onlyPlugin(p, names.DynamicResources), names.DynamicResources)); err != nil {
			return err
		}
		if s.devicesApart, err = build(withoutFilters(p, sets.New(names.DynamicResources))); err != nil {
			return err
		}
	}
	if s.placement, err = build(withoutFilters(p, drops)); err != nil {
		return err
	}
	if slices.Contains(filters, names.InterPodAffinity) {
		if s.affinity, err = build(onlyPlugin(p, names.InterPodAffinity)); err != nil {
			return err
		}
	}
	if err := s.buildUncounted(build); err != nil {
		return err
	}
	return nil
}

// Parallelizer runs work in parallel with the profile's parallelism.
func (s *Simulator) Parallelizer() fwk.Parallelizer { return s.fw.Parallelizer() }

// Use makes the simulator see these nodes and pods (a schedcache.Snapshot, or a Snapshot and its
// open forks) until the next call. Callers serialise their
// questions: one planner owns a Simulator.
//
// planned are nodes that do not exist yet but will hold pods the caller has placed on them (the
// planner's new NodeClaims). Plugins that look across nodes in PreFilter (inter-pod affinity,
// topology spread, ReadWriteOncePod) count their pods as they count the snapshot's; they are
// not in the snapshot because nothing may be placed on them except through the caller.
//
// With a Snapshot, what plugins are shown in a fork of it is theirs to read until the fork
// closes: the lists of nodes shown there are reused afterwards (see tail).
func (s *Simulator) Use(snapshot fwk.SharedLister, planned ...fwk.NodeInfo) {
	s.snapshot.Set(snapshot, planned)
}

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
	if status := s.devicesApart.RunFilterPlugins(ctx, state, pod, node); !status.IsSuccess() {
		return status
	}
	return s.filterDevices(ctx, state, pod, node)
}

// FilterCapacity runs NodeResourcesFit alone, and FilterPlacement every other Filter plugin,
// with the state that PreFilter prepared. Together they are exactly Filter: a pod passes Filter
// on a node iff it passes both. They exist because the two halves read disjoint parts of a node:
// NodeResourcesFit reads only allocatable, requested resources and the pod count, while every
// other Filter plugin reads labels, taints, ports, volumes and the pods themselves but never
// allocatable. A planner weighing one set of pods on many instance types can therefore ask the
// placement half once per distinct set of labels and the capacity half once per distinct
// allocatable, instead of the whole Filter once per offering.
func (s *Simulator) FilterCapacity(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	return s.capacity.RunFilterPlugins(ctx, state, pod, node)
}

// FilterPlacement: see FilterCapacity.
func (s *Simulator) FilterPlacement(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	if status := s.placement.RunFilterPlugins(ctx, state, pod, node); !status.IsSuccess() {
		return status
	}
	return s.filterDevices(ctx, state, pod, node)
}

// InterPodAffinity runs InterPodAffinity alone, PreFilter and Filter, against the current
// snapshot: whether the pod's required pod (anti-)affinity, and the other pods' anti-affinity,
// allow it on node, whatever the other plugins say. A profile without the plugin allows it.
func (s *Simulator) InterPodAffinity(ctx context.Context, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	if s.affinity == nil {
		return nil
	}
	state := framework.NewCycleState()
	if _, status, _ := s.affinity.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() {
		return status
	}
	return s.affinity.RunFilterPlugins(ctx, state, pod, node)
}

// ProfileNodeKeys returns the node label keys the profile's own configuration makes Filter read
// for every pod: selector are those of NodeAffinity's addedAffinity, and spread those of
// PodTopologySpread's DoNotSchedule default constraints (for pods without constraints of their
// own).
func (s *Simulator) ProfileNodeKeys() (selector, spread []string) {
	for _, pc := range s.profile.PluginConfig {
		switch args := pc.Args.(type) {
		case *config.NodeAffinityArgs:
			if args.AddedAffinity != nil && args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				for _, t := range args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
					for _, e := range t.MatchExpressions {
						selector = append(selector, e.Key)
					}
				}
			}
		case *config.PodTopologySpreadArgs:
			if args.DefaultingType == config.ListDefaulting {
				for _, c := range args.DefaultConstraints {
					if c.WhenUnsatisfiable == corev1.DoNotSchedule {
						spread = append(spread, c.TopologyKey)
					}
				}
			}
		}
	}
	return selector, spread
}

// AddPod tells the PreFilter state of podToSchedule that added now runs on node, so that
// affinity and spread see pods placed earlier in the same plan.
func (s *Simulator) AddPod(ctx context.Context, state fwk.CycleState, podToSchedule *corev1.Pod, added fwk.PodInfo, node fwk.NodeInfo) *fwk.Status {
	return s.fw.RunPreFilterExtensionAddPod(ctx, state, podToSchedule, added, node)
}

// RemovePod tells the PreFilter state of podToSchedule that removed no longer runs on node; with
// AddPod it moves a pod's count when its node's labels change.
func (s *Simulator) RemovePod(ctx context.Context, state fwk.CycleState, podToSchedule *corev1.Pod, removed fwk.PodInfo, node fwk.NodeInfo) *fwk.Status {
	return s.fw.RunPreFilterExtensionRemovePod(ctx, state, podToSchedule, removed, node)
}
