package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// serveKarpenterMetrics points Karpenter's cluster gauges at the scheduler's and Tailor's
// informers, read at scrape time, and observes pod startup and NodeClaim condition transitions
// from the informers until ctx ends (a leader that loses its lease stops observing, as its controllers stop).
func (o *Operator) serveKarpenterMetrics(ctx context.Context, h fwk.Handle) error {
	factory := h.SharedInformerFactory()
	nodes, pods := factory.Core().V1().Nodes().Lister(), factory.Core().V1().Pods().Lister()
	metrics.SetClusterSource(metrics.ClusterSource{
		Nodes: func() []*corev1.Node { list, _ := nodes.List(labels.Everything()); return list },
		Pods:  func() []*corev1.Pod { list, _ := pods.List(labels.Everything()); return list },
		NodePools: func() []*karpv1.NodePool {
			list, _ := o.poolLister.List(labels.Everything())
			return list
		},
		NodeClaims: func() []*karpv1.NodeClaim {
			list, _ := o.claimLister.List(labels.Everything())
			return list
		},
		Now: func() time.Time { return o.clock.Now() },
	})
	claims, err := o.claimInform.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if c, ok := obj.(*karpv1.NodeClaim); ok {
				metrics.NodeClaimConditionsChanged(nil, c)
			}
		},
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*karpv1.NodeClaim); ok {
				if c, ok := cur.(*karpv1.NodeClaim); ok {
					metrics.NodeClaimConditionsChanged(o, c)
				}
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if c, ok := obj.(*karpv1.NodeClaim); ok {
				metrics.NodeClaimGone(c, o.clock.Now())
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching NodeClaims for Karpenter's status condition metrics: %w", err)
	}
	informer := factory.Core().V1().Pods().Informer()
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*corev1.Pod); ok {
				if p, ok := cur.(*corev1.Pod); ok {
					metrics.PodChanged(o, p)
				}
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching pods for Karpenter's pod startup metrics: %w", err)
	}
	go func() {
		<-ctx.Done()
		_ = informer.RemoveEventHandler(reg)
		_ = o.claimInform.RemoveEventHandler(claims)
	}()
	return nil
}
