package sandbox

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	tailorinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions"
)

// claimsByNode indexes NodeClaims by the node they launched.
const claimsByNode = "status.nodeName"

// StartStartupTaintAgent plays the agent (a CNI or device-plugin DaemonSet in a real cluster)
// that removes a NodePool's startup taints once its node is Ready. Without it a node launched
// from a pool with startupTaints would never be initialized, since kwok runs no such DaemonSet.
//
// It watches nodes and NodeClaims, as a DaemonSet's agent would watch its own node, rather than
// listing every NodeClaim a few times a second: at thousands of NodeClaims those lists were a
// tenth of the API server's work in `make bench-scale`.
func StartStartupTaintAgent(ctx context.Context, kube kubernetes.Interface, clients clientset.Interface) {
	a := newStartupTaintAgent(kube, clients)
	a.start(ctx)
	go a.run(ctx)
}

// startupTaintAgent works through a queue of node names: a node is looked at when it or a
// NodeClaim that launched it changes.
type startupTaintAgent struct {
	kube      kubernetes.Interface
	nodes     informers.SharedInformerFactory
	claims    tailorinformers.SharedInformerFactory
	nodeList  corelisters.NodeLister
	claimIdx  cache.Indexer
	queue     workqueue.TypedRateLimitingInterface[string]
	hasSynced []cache.InformerSynced
}

func newStartupTaintAgent(kube kubernetes.Interface, clients clientset.Interface) *startupTaintAgent {
	a := &startupTaintAgent{
		kube:   kube,
		nodes:  informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(dropManagedFields)),
		claims: tailorinformers.NewSharedInformerFactoryWithOptions(clients, 0, tailorinformers.WithTransform(dropManagedFields)),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "sandbox-startup-taints"}),
	}
	nodeInformer := a.nodes.Core().V1().Nodes()
	a.nodeList = nodeInformer.Lister()
	claimInformer := a.claims.Karpenter().V1().NodeClaims().Informer()
	// Only fails once the informer has started, which it has not.
	_ = claimInformer.AddIndexers(cache.Indexers{claimsByNode: func(obj any) ([]string, error) {
		if c, ok := obj.(*karpv1.NodeClaim); ok && c.Status.NodeName != "" {
			return []string{c.Status.NodeName}, nil
		}
		return nil, nil
	}})
	a.claimIdx = claimInformer.GetIndexer()
	_, _ = claimInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.claimChanged,
		UpdateFunc: func(_, obj any) { a.claimChanged(obj) },
	})
	_, _ = nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.nodeChanged,
		UpdateFunc: func(_, obj any) { a.nodeChanged(obj) },
	})
	a.hasSynced = []cache.InformerSynced{nodeInformer.Informer().HasSynced, claimInformer.HasSynced}
	return a
}

func (a *startupTaintAgent) claimChanged(obj any) {
	if c, ok := obj.(*karpv1.NodeClaim); ok && len(c.Spec.StartupTaints) > 0 && c.Status.NodeName != "" {
		a.queue.Add(c.Status.NodeName)
	}
}

// nodeChanged queues a Ready node that has taints; the worker sees whether any is a startup taint.
func (a *startupTaintAgent) nodeChanged(obj any) {
	if n, ok := obj.(*corev1.Node); ok && len(n.Spec.Taints) > 0 && nodeutil.IsNodeReady(n) {
		a.queue.Add(n.Name)
	}
}

func (a *startupTaintAgent) start(ctx context.Context) {
	a.nodes.Start(ctx.Done())
	a.claims.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		a.queue.ShutDown()
	}()
}

// run clears startup taints until ctx ends; one worker is enough for the patches a fleet's
// nodes need, each one write.
func (a *startupTaintAgent) run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), a.hasSynced...) {
		return
	}
	for a.next(ctx) {
	}
}

func (a *startupTaintAgent) next(ctx context.Context) bool {
	name, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(name)
	if err := a.clear(ctx, name); err != nil {
		klog.FromContext(ctx).V(4).Info("Startup taints not removed yet", "node", name, "err", err)
		a.queue.AddRateLimited(name)
		return true
	}
	a.queue.Forget(name)
	return true
}

// clear removes from the node every startup taint of the NodeClaims that launched it, once the
// node is Ready.
func (a *startupTaintAgent) clear(ctx context.Context, name string) error {
	node, err := a.nodeList.Get(name)
	if err != nil || !nodeutil.IsNodeReady(node) {
		return nil // gone, or not Ready yet: its next change queues it again
	}
	claims, err := a.claimIdx.ByIndex(claimsByNode, name)
	if err != nil {
		return err
	}
	var startup []corev1.Taint
	for _, obj := range claims {
		startup = append(startup, obj.(*karpv1.NodeClaim).Spec.StartupTaints...)
	}
	kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
		return slices.ContainsFunc(startup, func(st corev1.Taint) bool { return st.MatchTaint(&t) })
	})
	if len(kept) == len(node.Spec.Taints) {
		return nil
	}
	// The resource version makes a concurrent taint change (the unregistered or disrupted taint)
	// fail this patch rather than be overwritten; the retry reads the node again.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"spec":     map[string]any{"taints": kept},
	})
	if err != nil {
		return err
	}
	_, err = a.kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
