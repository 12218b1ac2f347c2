package top

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	eventslisters "k8s.io/client-go/listers/events/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	tailorinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// Source keeps the cluster's nodes, pods, NodeClaims, NodePools and Events in informers and says
// when any of them changed, so the view is rebuilt on watch events rather than on a timer.
type Source struct {
	nodes   corelisters.NodeLister
	pods    corelisters.PodLister
	events  eventslisters.EventLister
	claims  karplisters.NodeClaimLister
	pools   karplisters.NodePoolLister
	synced  []cache.InformerSynced
	changed chan struct{}
}

// Watch starts the informers; they stop with ctx.
func Watch(ctx context.Context, kube kubernetes.Interface, tailor versioned.Interface) *Source {
	s := &Source{changed: make(chan struct{}, 1)}
	kf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(dropManagedFields))
	tf := tailorinformers.NewSharedInformerFactoryWithOptions(tailor, 0, tailorinformers.WithTransform(dropManagedFields))
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.poke() },
		UpdateFunc: func(any, any) { s.poke() },
		DeleteFunc: func(any) { s.poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		kf.Core().V1().Nodes().Informer(), kf.Core().V1().Pods().Informer(), kf.Events().V1().Events().Informer(),
		tf.Karpenter().V1().NodeClaims().Informer(), tf.Karpenter().V1().NodePools().Informer(),
	} {
		_, _ = inf.AddEventHandler(notify)
		s.synced = append(s.synced, inf.HasSynced)
	}
	s.nodes, s.pods, s.events = kf.Core().V1().Nodes().Lister(), kf.Core().V1().Pods().Lister(), kf.Events().V1().Events().Lister()
	s.claims, s.pools = tf.Karpenter().V1().NodeClaims().Lister(), tf.Karpenter().V1().NodePools().Lister()
	kf.Start(ctx.Done())
	tf.Start(ctx.Done())
	return s
}

// poke records that something changed; one pending notice stands for any number of changes, so
// a burst of pod updates costs one rebuild.
func (s *Source) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Changed receives after any watched object changed.
func (s *Source) Changed() <-chan struct{} { return s.changed }

// WaitForSync waits until every informer has listed its objects once.
func (s *Source) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("listing nodes, pods, NodeClaims, NodePools and events: %w", context.Cause(ctx))
	}
	return nil
}

// Cluster is what the informers hold now.
func (s *Source) Cluster() (Cluster, error) {
	var c Cluster
	var err error
	if c.Nodes, err = s.nodes.List(labels.Everything()); err != nil {
		return c, err
	}
	if c.Pods, err = s.pods.List(labels.Everything()); err != nil {
		return c, err
	}
	if c.Events, err = s.events.List(labels.Everything()); err != nil {
		return c, err
	}
	if c.NodeClaims, err = s.claims.List(labels.Everything()); err != nil {
		return c, err
	}
	c.NodePools, err = s.pools.List(labels.Everything())
	return c, err
}

// dropManagedFields keeps the informers' memory to what the view reads: on a large cluster the
// pods' managedFields are most of their size.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
