// Package dradriver stands in for the DRA drivers of a sandbox's nodes, as kwok stands in for
// their kubelets: when a node registers it publishes the ResourceSlices the drivers of the node's
// instance type would (cloud.ResourceSlices of the type's devices), and deletes them when the
// node goes. With them the scheduler's DynamicResources plugin allocates ResourceClaims on the
// node as it would in a cluster running NVIDIA's, Neuron's or EFA's DRA driver.
package dradriver

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

// ManagedByLabel marks the slices this driver publishes, so that it reads and deletes only its
// own: a test or a user may publish slices of other drivers in the same cluster.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "tailor-sandbox-dra-driver"
)

// Devices returns the devices the DRA drivers of node publish; none (nil, nil) for a node whose
// type has none or is unknown. An error is retried with backoff.
type Devices func(ctx context.Context, node *corev1.Node) ([]cloud.DeviceSet, error)

// Options configure the driver.
type Options struct {
	Kube kubernetes.Interface
	// Devices says what a node publishes.
	Devices Devices
	// Serves reports whether the driver plays the node's drivers: the sandbox's kwok nodes only,
	// as a real driver runs only where its DaemonSet does.
	Serves func(node *corev1.Node) bool
}

// Driver publishes the ResourceSlices of the nodes it serves.
type Driver struct {
	opts   Options
	nodes  corelisters.NodeLister
	slices resourcelisters.ResourceSliceLister
	// sliceIndex finds a node's slices without listing every slice.
	sliceIndex cache.Indexer
	queue      workqueue.TypedRateLimitingInterface[string]
	// devices caches what each node publishes: a node's type never changes, and asking
	// the cloud on every status update of every node would cost a catalog lookup each.
	devicesMu sync.Mutex
	devices   map[string]nodeDevices
	factories []informers.SharedInformerFactory
	synced    []cache.InformerSynced
}

const byNode = "nodeName"

type nodeDevices struct {
	uid  types.UID
	sets []cloud.DeviceSet
}

// New builds the driver over informers of its own, which Run starts.
func New(opts Options) (*Driver, error) {
	nodeFactory := informers.NewSharedInformerFactory(opts.Kube, 10*time.Minute)
	sliceFactory := informers.NewSharedInformerFactoryWithOptions(opts.Kube, 10*time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ManagedByLabel + "=" + ManagedBy }))
	nodeInformer := nodeFactory.Core().V1().Nodes()
	sliceInformer := sliceFactory.Resource().V1().ResourceSlices()
	d := &Driver{
		opts:    opts,
		devices: map[string]nodeDevices{},
		nodes:   nodeInformer.Lister(),
		slices:  sliceInformer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "sandbox_dra_driver"}),
		factories: []informers.SharedInformerFactory{nodeFactory, sliceFactory},
		synced:    []cache.InformerSynced{nodeInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced},
	}
	if err := sliceInformer.Informer().AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
		if s, ok := obj.(*resourcev1.ResourceSlice); ok && s.Spec.NodeName != nil {
			return []string{*s.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	d.sliceIndex = sliceInformer.Informer().GetIndexer()
	enqueueNode := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			d.queue.Add(key)
		}
	}
	// A slice changed or deleted by someone else is put back as the node's type says.
	enqueueSlice := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if s, ok := obj.(*resourcev1.ResourceSlice); ok && s.Spec.NodeName != nil {
			d.queue.Add(*s.Spec.NodeName)
		}
	}
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueNode, UpdateFunc: func(_, o any) { enqueueNode(o) }, DeleteFunc: enqueueNode,
	}); err != nil {
		return nil, err
	}
	if _, err := sliceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueSlice, UpdateFunc: func(_, o any) { enqueueSlice(o) }, DeleteFunc: enqueueSlice,
	}); err != nil {
		return nil, err
	}
	return d, nil
}

// Run starts the informers and works the queue until ctx ends.
func (d *Driver) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer d.queue.ShutDown()
	for _, f := range d.factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), d.synced...) {
		return
	}
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for d.processNext(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

func (d *Driver) processNext(ctx context.Context) bool {
	key, quit := d.queue.Get()
	if quit {
		return false
	}
	defer d.queue.Done(key)
	if err := d.sync(ctx, key); err != nil {
		if !apierrors.IsConflict(err) {
			klog.FromContext(ctx).Error(err, "Stand-in DRA driver: syncing the node's ResourceSlices failed; retrying", "node", key)
		}
		d.queue.AddRateLimited(key)
		return true
	}
	d.queue.Forget(key)
	return true
}

// devicesOf is Options.Devices, asked once per node (a node re-created under the same name is
// another node: the UID tells them apart).
func (d *Driver) devicesOf(ctx context.Context, node *corev1.Node) ([]cloud.DeviceSet, error) {
	d.devicesMu.Lock()
	known, ok := d.devices[node.Name]
	d.devicesMu.Unlock()
	if ok && known.uid == node.UID {
		return known.sets, nil
	}
	sets, err := d.opts.Devices(ctx, node)
	if err != nil {
		return nil, err
	}
	d.devicesMu.Lock()
	d.devices[node.Name] = nodeDevices{uid: node.UID, sets: sets}
	d.devicesMu.Unlock()
	return sets, nil
}

// forget drops what devicesOf remembers of a node that is gone.
func (d *Driver) forget(nodeName string) {
	d.devicesMu.Lock()
	defer d.devicesMu.Unlock()
	delete(d.devices, nodeName)
}
