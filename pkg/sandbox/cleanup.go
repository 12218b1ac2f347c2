package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/cronjob"
	"k8s.io/kubernetes/pkg/controller/endpointslice"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	namespacecontroller "k8s.io/kubernetes/pkg/controller/namespace"
	"k8s.io/kubernetes/pkg/controller/ttlafterfinished"
)

// Controllers names what the sandbox runs of kube-controller-manager, and what it does not and
// why, for `tailor sandbox --help` and docs/sandbox.md.
const Controllers = `Of kube-controller-manager's controllers, the sandbox runs (from its own packages, one or
two workers each):
  Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, TTL-after-finished
  disruption: PodDisruptionBudget status, so evictions respect budgets
  garbage collector: background, foreground and orphan deletion (deleting a NodePool deletes
    its NodeClaims, as in Karpenter)
  namespace: a deleted namespace is emptied and goes away
  EndpointSlice, PersistentVolume (with an EBS-like provisioner)
  resourceclaim: pods get the ResourceClaims of their ResourceClaimTemplates (resource.k8s.io/v1
    is served; a stand-in DRA driver publishes each kwok node's devices as ResourceSlices)
It does not run:
  node lifecycle, taint eviction: kwok marks a node Ready once and renews no heartbeat nor
    Lease, which that controller would take for a dead node; Tailor's node repair acts on
    unhealthy nodes and Tailor drains through the Eviction API
  ServiceAccount and token controllers: the ServiceAccount admission plugin is off
  service load balancers, routes, node IPAM: no cloud controller; kwok gives pods addresses
  HPA, certificates, bootstrap tokens, PVC/PV protection, attach/detach,
    volume expansion`

// clusterControllers are the controllers a user's clean-up relies on: the garbage collector,
// the namespace controller, CronJobs, TTL-after-finished and EndpointSlices. They share the
// workload controllers' informers: they add no copy of the pods, nodes and Jobs.
type clusterControllers struct {
	gc        *garbagecollector.GarbageCollector
	discovery kubernetes.Interface
	informers informerfactory.InformerFactory
	// informersStarted is closed once the informers run: the garbage collector's graph starts
	// the monitors it adds later itself.
	informersStarted chan struct{}
	namespaces       *namespacecontroller.NamespaceController
	cronJobs         *cronjob.ControllerV2
	ttl              *ttlafterfinished.Controller
	endpointSlices   *endpointslice.Controller
}

// newClusterControllers builds them as kube-controller-manager's NewControllerDescriptors do,
// over factory, which the caller starts; mapper is the workload controllers' deferred one.
func newClusterControllers(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, factory informers.SharedInformerFactory, mapper *restmapper.DeferredDiscoveryRESTMapper) (*clusterControllers, error) {
	metadataClient, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the metadata client of the garbage collector: %w", err)
	}
	// The garbage collector watches every resource that can be deleted: the typed informers
	// it shares where the factory has them, metadata alone for the rest (CRDs among them).
	metadataInformers := metadatainformer.NewSharedInformerFactoryWithOptions(metadataClient, 10*time.Minute, metadatainformer.WithTransform(dropManagedFields))
	c := &clusterControllers{
		discovery:        kube,
		informers:        informerfactory.NewInformerFactory(factory, metadataInformers),
		informersStarted: make(chan struct{}),
	}
	graph := garbagecollector.NewDependencyGraphBuilder(ctx, metadataClient, mapper, garbagecollector.DefaultIgnoredResources(), c.informers, c.informersStarted)
	if c.gc, err = garbagecollector.NewComposedGarbageCollector(ctx, kube, metadataClient, mapper, graph); err != nil {
		return nil, fmt.Errorf("creating the garbage collector: %w", err)
	}
	c.namespaces = namespacecontroller.NewNamespaceController(ctx, kube, metadataClient, kube.Discovery().ServerPreferredNamespacedResources,
		factory.Core().V1().Namespaces(), 5*time.Minute, corev1.FinalizerKubernetes)
	if c.cronJobs, err = cronjob.NewControllerV2(ctx, factory.Batch().V1().Jobs(), factory.Batch().V1().CronJobs(), kube); err != nil {
		return nil, fmt.Errorf("creating the CronJob controller: %w", err)
	}
	c.ttl = ttlafterfinished.New(ctx, factory.Batch().V1().Jobs(), kube)
	// A second of batching (kube-controller-manager's default is none) makes a burst of pods
	// behind a Service one slice update a second, not one a pod.
	c.endpointSlices = endpointslice.NewController(ctx, factory.Core().V1().Pods(), factory.Core().V1().Services(),
		factory.Core().V1().Nodes(), factory.Discovery().V1().EndpointSlices(), 100, kube, time.Second)
	return c, nil
}

// run starts the informers the typed factory does not (the metadata ones), then the controllers.
func (c *clusterControllers) run(ctx context.Context) {
	c.informers.Start(ctx.Done())
	close(c.informersStarted)
	// kube-controller-manager's period: how soon a new CRD's objects are collected.
	const gcSyncPeriod = 30 * time.Second
	go c.gc.Run(ctx, 2, gcSyncPeriod)
	go c.gc.Sync(ctx, c.discovery.Discovery(), gcSyncPeriod)
	go c.namespaces.Run(ctx, 1)
	go c.cronJobs.Run(ctx, 1)
	go c.ttl.Run(ctx, 1)
	go c.endpointSlices.Run(ctx, 1)
}

// dropManagedFields is kube-controller-manager's informer transform: no controller reads them.
func dropManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
