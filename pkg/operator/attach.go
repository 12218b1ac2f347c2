package operator

import (
	"fmt"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1alpha2"
	kubefeatures "k8s.io/kubernetes/pkg/features"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	tailorinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions"
	"github.com/tailor-sh/tailor/pkg/lifecycle"
	"github.com/tailor-sh/tailor/pkg/lifecycle/gc"
	"github.com/tailor-sh/tailor/pkg/lifecycle/termination"
	"github.com/tailor-sh/tailor/pkg/nodepool/counter"
	"github.com/tailor-sh/tailor/pkg/nodepool/readiness"
	"github.com/tailor-sh/tailor/pkg/plugins/tailor"
	"github.com/tailor-sh/tailor/pkg/provision"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// The steps of Attach, in order. Each runs with o.mu held.

// attachClients builds the client of Tailor's resources, the cloud and the informers every
// controller shares.
func (o *Operator) attachClients(h fwk.Handle, args *tailor.Args) error {
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
	return nil
}

// attachControllers builds the provisioner and the controllers of NodeClaims, NodePools and
// nodes that are going away.
func (o *Operator) attachControllers(h fwk.Handle, args *tailor.Args) error {
	nodeClaims := o.clients.KarpenterV1().NodeClaims()
	nodeInformer := h.SharedInformerFactory().Core().V1().Nodes()
	// Shared by the lifecycle controller, which holds a NodePool back after a permanent launch
	// failure, and the provisioner, which leaves it out of plans meanwhile.
	backoff := cloud.NewLaunchBackoff(o.clock)
	pods := o.bookedPods(h) // builds o.bookings, which Destined reads
	o.provisioner = provision.New(provision.Options{
		SchedulerName:         h.ProfileName(),
		Kube:                  h.ClientSet(),
		NodeClaims:            nodeClaims,
		ClaimLister:           o.claimLister,
		ClaimsSeenUpTo:        o.claimInform.LastSyncResourceVersion,
		PoolLister:            o.poolLister,
		Pods:                  pods,
		Nodes:                 nodeInformer.Lister(),
		DaemonSets:            h.SharedInformerFactory().Apps().V1().DaemonSets().Lister(),
		Cloud:                 o.cloud,
		Recorder:              h.EventRecorder(),
		Clock:                 o.clock,
		BatchIdle:             args.BatchIdleDuration.Duration,
		BatchMax:              args.BatchMaxDuration.Duration,
		StrandedAfter:         args.StrandedAfter.Duration,
		Activate:              func(pods map[string]*corev1.Pod) { h.Activate(klog.Background(), pods) },
		Backoff:               backoff,
		PodGroups:             podGroups(h),
		GangCompletionTimeout: args.GangCompletionTimeout.Duration,
		Destined:              o.bookings.Destinations,
		Pools:                 o.pools,
	})
	var err error
	o.lifecycle, err = lifecycle.New(lifecycle.Options{
		Kube:         h.ClientSet(),
		NodeClaims:   nodeClaims,
		ClaimLister:  o.claimLister,
		ClaimInform:  o.claimInform,
		NodeInformer: nodeInformer.Informer(),
		Nodes:        nodeInformer.Lister(),
		Cloud:        o.cloud,
		Recorder:     h.EventRecorder(),
		Clock:        o.clock,
		Replan:       o.provisioner.Replan,
		Backoff:      backoff,
		// The scheduler's own informers, which its DynamicResources plugin watches too.
		DeviceClasses:  h.SharedInformerFactory().Resource().V1().DeviceClasses().Lister(),
		ResourceSlices: h.SharedInformerFactory().Resource().V1().ResourceSlices().Lister(),
	})
	if err != nil {
		return err
	}
	if err := o.attachNodePoolControllers(); err != nil {
		return err
	}
	return o.attachRemoval(h)
}

// attachNodePoolControllers builds the controllers of the NodePools' status: readiness and the
// resources counted.
func (o *Operator) attachNodePoolControllers() error {
	var err error
	pools := o.clients.KarpenterV1().NodePools()
	o.readiness, err = readiness.New(readiness.Options{NodePools: pools, PoolLister: o.poolLister, PoolInform: o.poolInform,
		Cloud: o.cloud, Clock: o.clock})
	if err != nil {
		return err
	}
	o.counter, err = counter.New(counter.Options{NodePools: pools, PoolLister: o.poolLister, PoolInform: o.poolInform,
		ClaimLister: o.claimLister, ClaimInform: o.claimInform, Clock: o.clock})
	return err
}

// attachRemoval builds what removes capacity: termination, which drains and deletes nodes being
// deleted, and the garbage collector of instances and NodeClaims that lost their other half.
func (o *Operator) attachRemoval(h fwk.Handle) error {
	nodeClaims := o.clients.KarpenterV1().NodeClaims()
	factory := h.SharedInformerFactory()
	nodeInformer := factory.Core().V1().Nodes()
	var err error
	o.termination, err = termination.New(termination.Options{
		Kube:              h.ClientSet(),
		NodeClaims:        nodeClaims,
		ClaimLister:       o.claimLister,
		NodeInformer:      nodeInformer.Informer(),
		PodInformer:       factory.Core().V1().Pods().Informer(),
		VolumeAttachments: factory.Storage().V1().VolumeAttachments().Lister(),
		PVCs:              factory.Core().V1().PersistentVolumeClaims().Lister(),
		Nodes:             nodeInformer.Lister(),
		PDBs:              factory.Policy().V1().PodDisruptionBudgets().Lister(),
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
		ClaimLister: o.claimLister,
		Nodes:       nodeInformer.Lister(),
		Cloud:       o.cloud,
		Clock:       o.clock,
	})
	return nil
}

// watchForProvisioner tells the provisioner of the pod and NodeClaim changes it acts on.
func (o *Operator) watchForProvisioner(h fwk.Handle) error {
	// Unschedulable pods of this scheduler also reach the provisioner through the informer: with
	// zero nodes the scheduler never calls PostFilter.
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.podChanged(nil, obj) },
		UpdateFunc: o.podChanged,
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				o.provisioner.PodGone(pod)
			}
		},
	}); err != nil {
		return err
	}
	_, err := o.claimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if c, ok := obj.(*karpv1.NodeClaim); ok {
				o.provisioner.ClaimGone(c.Name)
				o.provisioner.Released(c.Name)
			}
		},
		UpdateFunc: o.claimChanged,
	})
	return err
}

// claimChanged: a launching claim whose node name became known lets its planned pods be
// nominated to it, and one that initialized wakes them in the scheduler's queue. One that
// initialized (Initialized) or is going away (Released) no longer holds its pods; a deleted one
// is no capacity in flight any more.
func (o *Operator) claimChanged(oldObj, newObj any) {
	old, ok := oldObj.(*karpv1.NodeClaim)
	if !ok {
		return
	}
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

// watchLeavingNodes plans for a node that starts leaving before its pods go: they will need room
// elsewhere.
func (o *Operator) watchLeavingNodes(h fwk.Handle) error {
	_, err := h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			if old, ok := oldObj.(*corev1.Node); ok {
				if n, ok := newObj.(*corev1.Node); ok && scheduling.IsLeaving(n, nil) && !scheduling.IsLeaving(old, nil) {
					o.provisioner.Replan()
				}
			}
		},
	})
	return err
}

// podGroups is the scheduler's PodGroup lister when it schedules gangs, and nil otherwise: the
// API (scheduling.k8s.io/v1alpha2) is served only where its feature gates are on, and an informer
// of an API that is not served would retry its list forever.
func podGroups(h fwk.Handle) schedulinglisters.PodGroupLister {
	if !utilfeature.DefaultFeatureGate.Enabled(kubefeatures.GenericWorkload) || !utilfeature.DefaultFeatureGate.Enabled(kubefeatures.GangScheduling) {
		return nil
	}
	return h.SharedInformerFactory().Scheduling().V1alpha2().PodGroups().Lister()
}
