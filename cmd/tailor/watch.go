package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/disruption"
	karpinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// watchFleet narrates, as they happen, NodeClaims being launched, registered, initialized and
// deleted, and pods being bound.
func watchFleet(ctx context.Context, cluster *sandbox.Cluster) {
	claims := karpinformers.NewNodeClaimInformer(cluster.Tailor, 0, cache.Indexers{})
	_, _ = claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if c, ok := obj.(*karpv1.NodeClaim); ok {
				say("nodeclaim %s created (nodepool %s)", c.Name, c.Labels[karpv1.NodePoolLabelKey])
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*karpv1.NodeClaim)
			n, ok2 := newObj.(*karpv1.NodeClaim)
			if !ok1 || !ok2 {
				return
			}
			for _, cond := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
				if !o.IsTrue(cond) && n.IsTrue(cond) {
					say("nodeclaim %s %s: %s", n.Name, describe(cond), claimSummary(n))
				}
			}
			if o.DeletionTimestamp == nil && n.DeletionTimestamp != nil {
				say("nodeclaim %s terminating", n.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if c, ok := obj.(*karpv1.NodeClaim); ok {
				say("nodeclaim %s deleted", c.Name)
			}
		},
	})
	go claims.Run(ctx.Done())

	factory := informers.NewSharedInformerFactory(cluster.Kube, 0)
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 {
				return
			}
			if o.Spec.NodeName == "" && n.Spec.NodeName != "" {
				say("pod %s/%s bound to %s", n.Namespace, n.Name, n.Spec.NodeName)
			}
			if o.DeletionTimestamp == nil && n.DeletionTimestamp != nil && n.Spec.NodeName != "" {
				say("pod %s/%s leaving %s", n.Namespace, n.Name, n.Spec.NodeName)
			}
		},
	})
	_, _ = factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 {
				return
			}
			if o.DeletionTimestamp == nil && n.DeletionTimestamp != nil {
				say("node %s deleting: draining", n.Name)
			}
			if !hasTaint(o, karpv1.DisruptedTaintKey) && hasTaint(n, karpv1.DisruptedTaintKey) {
				say("node %s tainted %s", n.Name, karpv1.DisruptedNoScheduleTaint.ToString())
			}
		},
		DeleteFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				say("node %s deleted", n.Name)
			}
		},
	})
	// The disruption loop's decisions, with what they save, as it writes them on NodeClaims.
	_, _ = factory.Events().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ev, ok := obj.(*eventsv1.Event); ok && ev.Regarding.Kind == "NodeClaim" &&
				(ev.Reason == disruption.ReasonTerminating || ev.Reason == disruption.ReasonFailed) {
				say("nodeclaim %s: %s", ev.Regarding.Name, ev.Note)
			}
		},
	})
	factory.Start(ctx.Done())
}

func describe(cond string) string {
	switch cond {
	case karpv1.ConditionTypeLaunched:
		return "launched"
	case karpv1.ConditionTypeRegistered:
		return "registered"
	default:
		return "initialized"
	}
}

func claimSummary(c *karpv1.NodeClaim) string {
	return fmt.Sprintf("%s %s %s node=%s", c.Labels[corev1.LabelInstanceTypeStable], c.Labels[karpv1.CapacityTypeLabelKey],
		c.Labels[corev1.LabelTopologyZone], c.Status.NodeName)
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
