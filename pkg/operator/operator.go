// Package operator wires Tailor into kube-scheduler: it is the host of the Tailor plugin, owns
// the provisioner and the controllers, and starts them when the scheduler starts scheduling,
// which is after it has won leader election.
package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/utils/clock"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/controllers"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	tailorinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/lifecycle"
	"github.com/tailor-sh/tailor/pkg/lifecycle/gc"
	"github.com/tailor-sh/tailor/pkg/lifecycle/termination"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/nodepool/counter"
	"github.com/tailor-sh/tailor/pkg/nodepool/readiness"
	"github.com/tailor-sh/tailor/pkg/plugins/tailor"
	"github.com/tailor-sh/tailor/pkg/provision"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Operator is Tailor inside one scheduler process.
type Operator struct {
	newCloud NewCloudFunc
	cloud    cloud.CloudProvider
	clock    clock.WithTicker

	mu          sync.Mutex
	handle      fwk.Handle
	args        *tailor.Args
	clients     clientset.Interface
	informers   tailorinformers.SharedInformerFactory
	claimInform cache.SharedIndexInformer
	poolInform  cache.SharedIndexInformer
	claimLister karplisters.NodeClaimLister
	poolLister  karplisters.NodePoolLister
	provisioner *provision.Provisioner
	lifecycle   *lifecycle.Controller
	termination *termination.Controller
	gc          *gc.Collector
	readiness   *readiness.Controller
	counter     *counter.Controller
	signals     signals
	voluntary   voluntary
	// wg counts Start and the controllers it runs, so Run returns only once they have all
	// stopped: a replica that stopped leading must not write anything after a standby leads.
	wg sync.WaitGroup
}

var _ tailor.Host = (*Operator)(nil)

// NewCloudFunc builds the cloud once the scheduler's client exists; a simulated cloud uses the
// client to register its instances' Nodes.
type NewCloudFunc func(kube kubernetes.Interface) (cloud.CloudProvider, error)

// New returns an Operator that launches capacity in the cloud newCloud builds.
func New(newCloud NewCloudFunc, clk clock.WithTicker) *Operator {
	return &Operator{newCloud: newCloud, clock: clk}
}

// Attach is called by the plugin factory while the scheduler builds its profiles. It builds the
// clients, informers and controllers; nothing runs until Start.
func (o *Operator) Attach(h fwk.Handle, args *tailor.Args) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.handle != nil {
		return fmt.Errorf("plugin %s attached twice", tailor.Name)
	}
	// The scheduler's config may ask for protobuf, which the API server does not speak for
	// custom resources.
	cfg := rest.CopyConfig(h.KubeConfig())
	cfg.ContentType = runtime.ContentTypeJSON
	clients, err := clientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the client for Tailor's resources: %w", err)
	}
	if o.cloud, err = o.newCloud(h.ClientSet()); err != nil {
		return err
	}
	o.handle, o.args, o.clients = h, args, clients
	// One informer per resource, shared by every controller; Start starts the factory.
	o.informers = tailorinformers.NewSharedInformerFactory(clients, 0)
	claims, pools := o.informers.Karpenter().V1().NodeClaims(), o.informers.Karpenter().V1().NodePools()
	o.claimInform, o.claimLister = claims.Informer(), claims.Lister()
	o.poolInform, o.poolLister = pools.Informer(), pools.Lister()
	claimLister, poolLister := o.claimLister, o.poolLister
	nodeClaims := clients.KarpenterV1().NodeClaims()
	podInformer := h.SharedInformerFactory().Core().V1().Pods()
	nodeInformer := h.SharedInformerFactory().Core().V1().Nodes()
	// Shared by the lifecycle controller, which holds a NodePool back after a permanent launch
	// failure, and the provisioner, which leaves it out of plans meanwhile.
	backoff := cloud.NewLaunchBackoff(o.clock)

	o.provisioner = provision.New(provision.Options{
		SchedulerName: h.ProfileName(),
		Kube:          h.ClientSet(),
		NodeClaims:    nodeClaims,
		ClaimLister:   claimLister,
		PoolLister:    poolLister,
		Pods:          podInformer.Lister(),
		Nodes:         nodeInformer.Lister(),
		DaemonSets:    h.SharedInformerFactory().Apps().V1().DaemonSets().Lister(),
		Cloud:         o.cloud,
		Recorder:      h.EventRecorder(),
		Clock:         o.clock,
		BatchIdle:     args.BatchIdleDuration.Duration,
		BatchMax:      args.BatchMaxDuration.Duration,
		StrandedAfter: args.StrandedAfter.Duration,
		Activate:      func(pods map[string]*corev1.Pod) { h.Activate(klog.Background(), pods) },
		Backoff:       backoff,
	})
	o.lifecycle, err = lifecycle.New(lifecycle.Options{
		Kube:         h.ClientSet(),
		NodeClaims:   nodeClaims,
		ClaimLister:  claimLister,
		ClaimInform:  o.claimInform,
		NodeInformer: nodeInformer.Informer(),
		Nodes:        nodeInformer.Lister(),
		Cloud:        o.cloud,
		Recorder:     h.EventRecorder(),
		Clock:        o.clock,
		Replan:       o.provisioner.Trigger,
		Backoff:      backoff,
	})
	if err != nil {
		return err
	}
	o.readiness, err = readiness.New(readiness.Options{NodePools: clients.KarpenterV1().NodePools(), PoolLister: poolLister, PoolInform: o.poolInform,
		Cloud: o.cloud, Clock: o.clock})
	if err != nil {
		return err
	}
	o.counter, err = counter.New(counter.Options{NodePools: clients.KarpenterV1().NodePools(), PoolLister: poolLister, PoolInform: o.poolInform,
		ClaimLister: claimLister, ClaimInform: o.claimInform, Clock: o.clock})
	if err != nil {
		return err
	}
	o.termination, err = termination.New(termination.Options{
		Kube:              h.ClientSet(),
		NodeClaims:        nodeClaims,
		ClaimLister:       claimLister,
		NodeInformer:      nodeInformer.Informer(),
		PodInformer:       podInformer.Informer(),
		VolumeAttachments: h.SharedInformerFactory().Storage().V1().VolumeAttachments().Lister(),
		Nodes:             nodeInformer.Lister(),
		PDBs:              h.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Lister(),
		Cloud:             o.cloud,
		Recorder:          h.EventRecorder(),
		Clock:             o.clock,
		Metrics:           terminationMetrics{clock: o.clock},
		Placer:            placer{o},
	})
	if err != nil {
		return err
	}
	o.gc = gc.New(gc.Options{
		Kube:        h.ClientSet(),
		NodeClaims:  nodeClaims,
		ClaimLister: claimLister,
		Nodes:       nodeInformer.Lister(),
		Cloud:       o.cloud,
		Clock:       o.clock,
	})
	// Unschedulable pods of this scheduler also reach the provisioner through the informer: with
	// zero nodes the scheduler never calls PostFilter.
	if _, err = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.podChanged(nil, obj) },
		UpdateFunc: o.podChanged,
	}); err != nil {
		return err
	}
	// A launching claim whose node name became known lets its planned pods be nominated to it, and
	// one that initialized wakes them in the scheduler's queue; a deleted one is no capacity in
	// flight any more. One that initialized (Initialized) or is going away (Released) no longer holds
	// its pods.
	if _, err = o.claimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if c, ok := obj.(*karpv1.NodeClaim); ok {
				o.provisioner.ClaimGone(c.Name)
				o.provisioner.Released(c.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if old, ok := oldObj.(*karpv1.NodeClaim); ok {
				c, ok := newObj.(*karpv1.NodeClaim)
				if !ok {
					return
				}
				if old.Status.NodeName == "" && c.Status.NodeName != "" {
					o.provisioner.Launched()
					o.provisioner.Trigger()
				}
				if !old.IsTrue(karpv1.ConditionTypeInitialized) && c.IsTrue(karpv1.ConditionTypeInitialized) {
					o.provisioner.Initialized(c.Name, c.Status.NodeName)
				}
				if old.DeletionTimestamp == nil && c.DeletionTimestamp != nil {
					o.provisioner.Released(c.Name)
				}
			}
		},
	}); err != nil {
		return err
	}
	if err = o.attachSignals(h, clients); err != nil {
		return err
	}
	if err = o.attachDisruption(h, clients); err != nil {
		return err
	}
	// A node that starts leaving has pods that will need room elsewhere: plan it before they go.
	_, err = nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			if old, ok := oldObj.(*corev1.Node); ok {
				if n, ok := newObj.(*corev1.Node); ok && scheduling.IsLeaving(n, nil) && !scheduling.IsLeaving(old, nil) {
					o.provisioner.Trigger()
				}
			}
		},
	})
	return err
}

func (o *Operator) podChanged(oldObj, obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		old, _ := oldObj.(*corev1.Pod)
		o.provisioner.PodChanged(old, pod)
	}
}

// Enqueue implements tailor.Capacity.
func (o *Operator) Enqueue(pod *corev1.Pod) { o.provisioner.Enqueue(pod) }

// Rejected implements tailor.Capacity.
func (o *Operator) Rejected(pod *corev1.Pod, refusedOn func(string) *corev1.Node) {
	o.provisioner.Rejected(pod, refusedOn)
}

// NominatedNode implements tailor.Capacity.
func (o *Operator) NominatedNode(pod *corev1.Pod) (string, bool) {
	return o.provisioner.NominatedNode(pod)
}

// PlannedNode implements tailor.Capacity.
func (o *Operator) PlannedNode(pod *corev1.Pod) (string, bool) {
	return o.provisioner.PlannedNode(pod)
}

// HeldFor implements tailor.Capacity.
func (o *Operator) HeldFor(pod *corev1.Pod) (string, bool) { return o.provisioner.HeldFor(pod) }

// KeptRoom implements tailor.Capacity.
func (o *Operator) KeptRoom(pod *corev1.Pod) map[string][]scheduling.Kept {
	return o.provisioner.KeptRoom(pod)
}

// Reserve implements tailor.Capacity.
func (o *Operator) Reserve(pod *corev1.Pod, node string) bool {
	return o.provisioner.Reserve(pod, node)
}

// Unreserve implements tailor.Capacity.
func (o *Operator) Unreserve(pod *corev1.Pod, node string) { o.provisioner.Unreserve(pod, node) }

// Start runs the provisioner and controllers until ctx ends. profile is the scheduler profile
// that enabled the plugin; the simulator is built from it so planning uses the same Filters.
func (o *Operator) Start(ctx context.Context, profile *config.KubeSchedulerProfile, parallelism int) error {
	o.mu.Lock()
	h := o.handle
	o.mu.Unlock()
	if h == nil {
		return fmt.Errorf("no scheduler profile enables plugin %s", tailor.Name)
	}
	logger := klog.FromContext(ctx).WithName("tailor")
	ctx = klog.NewContext(ctx, logger)

	o.informers.Start(ctx.Done())
	factory := h.SharedInformerFactory()
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), o.claimInform.HasSynced, o.poolInform.HasSynced) {
		return fmt.Errorf("NodeClaim and NodePool informers did not sync; are Tailor's CRDs installed?")
	}
	factory.WaitForCacheSync(ctx.Done())

	sim, err := simulation.New(ctx, profile, simulation.DepsFromHandle(h, parallelism), tailor.Name)
	if err != nil {
		return err
	}
	// The provisioner weighs nominations and stranded pods beside planning, on a simulator of its own.
	checker, err := simulation.New(ctx, profile, simulation.DepsFromHandle(h, parallelism), tailor.Name)
	if err != nil {
		return err
	}
	if err := o.buildDisruption(ctx, h, profile, parallelism); err != nil {
		return err
	}
	// Start any informer the simulation's plugins registered that the scheduler's did not.
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	metrics.Register()
	nodes := h.SharedInformerFactory().Core().V1().Nodes().Lister()
	metrics.SetNodeSource(func() []*corev1.Node {
		list, _ := nodes.List(labels.Everything())
		return list
	})
	if err := o.serveKarpenterMetrics(ctx, h); err != nil {
		return err
	}
	o.wg.Go(func() { o.lifecycle.Run(ctx, int(*o.args.NodeClaimWorkers)) })
	o.wg.Go(func() { o.termination.Run(ctx, int(*o.args.TerminationWorkers)) })
	o.wg.Go(func() { o.gc.Run(ctx) })
	o.wg.Go(func() { o.readiness.Run(ctx) })
	o.wg.Go(func() { o.counter.Run(ctx) })
	pl := planner.NewPlanner(sim)
	pl.SetMinValuesPolicy(planner.MinValuesPolicy(o.args.MinValuesPolicy))
	o.wg.Go(func() { o.provisioner.Run(ctx, pl, checker) })
	o.startSignals(ctx)
	o.runDisruption(ctx)
	// Clouds with controllers of their own (AWS: EC2NodeClass status, the interruption queue) run
	// them only on the leader, like Tailor's.
	if cp, ok := o.cloud.(controllers.Provider); ok {
		for _, c := range cp.Controllers(controllers.Deps{Kube: h.ClientSet(), Clients: o.clients, Recorder: h.EventRecorder()}) {
			o.wg.Go(func() {
				if err := c.Run(ctx); err != nil && ctx.Err() == nil {
					logger.Error(err, "Cloud controller stopped")
				}
			})
		}
	}
	logger.Info("Tailor started", "profile", profile.SchedulerName, "cloud", o.cloud.Name())
	return nil
}

// terminationMetrics counts what the termination controller does.
type terminationMetrics struct{ clock clock.PassiveClock }

func (terminationMetrics) Evicted(outcome string) { metrics.PodsEvicted.WithLabelValues(outcome).Inc() }

func (m terminationMetrics) Terminated(node *corev1.Node, took time.Duration) {
	pool := node.Labels[karpv1.NodePoolLabelKey]
	metrics.TerminationDuration.WithLabelValues(pool).Observe(took.Seconds())
	metrics.NodeTerminated(pool, node.Labels[corev1.LabelTopologyZone], took, m.clock.Since(node.CreationTimestamp.Time))
}
