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
	"k8s.io/client-go/kubernetes"
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
	"github.com/tailor-sh/tailor/pkg/provreq"
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
	// pools keeps each NodePool's offerings for the provisioner and the disruption loop alike.
	pools *planner.PoolCache
	// bookings keep room for ProvisioningRequests; the provisioner and disruption see it as pods.
	bookings    *provreq.Bookings
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
	return &Operator{newCloud: newCloud, clock: clk, pools: &planner.PoolCache{}}
}

// Attach is called by the plugin factory while the scheduler builds its profiles. It builds the
// clients, informers and controllers; nothing runs until Start.
func (o *Operator) Attach(h fwk.Handle, args *tailor.Args) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.handle != nil {
		return fmt.Errorf("plugin %s attached twice", tailor.Name)
	}
	if err := o.attachClients(h, args); err != nil {
		return err
	}
	if err := o.attachControllers(h, args); err != nil {
		return err
	}
	if err := o.watchForProvisioner(h); err != nil {
		return err
	}
	if err := o.attachSignals(h, o.clients); err != nil {
		return err
	}
	if err := o.attachDisruption(h, o.clients); err != nil {
		return err
	}
	return o.watchLeavingNodes(h)
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

// Gate implements tailor.Capacity.
func (o *Operator) Gate(pod *corev1.Pod) (string, bool) { return o.provisioner.Gate(pod) }

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
		if ctx.Err() != nil {
			return nil // stopped while starting: not a failure
		}
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
	requests, err := o.buildProvisioningRequests(ctx, h, profile, parallelism)
	if err != nil {
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
	if err := o.runProvisioningRequests(ctx, h, requests); err != nil {
		return err
	}
	// Clouds with controllers of their own (AWS: EC2NodeClass status, the interruption queue) run
	// them only on the leader, like Tailor's.
	if cp, ok := o.cloud.(controllers.Provider); ok {
		for _, c := range cp.Controllers(controllers.Deps{Kube: h.ClientSet(), Clients: o.clients, Informers: o.informers, Recorder: h.EventRecorder()}) {
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
