package sandbox

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
)

// StartStartupTaintAgent plays the agent (a CNI or device-plugin DaemonSet in a real cluster)
// that removes a NodePool's startup taints once its node is Ready. Without it a node launched
// from a pool with startupTaints would never be initialized, since kwok runs no such DaemonSet.
func StartStartupTaintAgent(ctx context.Context, kube kubernetes.Interface, clients clientset.Interface) {
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		claims, err := clients.KarpenterV1().NodeClaims().List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for i := range claims.Items {
			c := &claims.Items[i]
			if len(c.Spec.StartupTaints) == 0 || c.Status.NodeName == "" {
				continue
			}
			clearStartupTaints(ctx, kube, c)
		}
	}, 200*time.Millisecond)
}

func clearStartupTaints(ctx context.Context, kube kubernetes.Interface, claim *karpv1.NodeClaim) {
	node, err := kube.CoreV1().Nodes().Get(ctx, claim.Status.NodeName, metav1.GetOptions{})
	if err != nil || !nodeutil.IsNodeReady(node) {
		return
	}
	kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
		return slices.ContainsFunc(claim.Spec.StartupTaints, func(st corev1.Taint) bool { return st.MatchTaint(&t) })
	})
	if len(kept) == len(node.Spec.Taints) {
		return
	}
	// The resource version makes a concurrent taint change (the unregistered or disrupted taint)
	// fail this patch rather than be overwritten; the next round retries.
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"spec":     map[string]any{"taints": kept},
	})
	if _, err := kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		klog.FromContext(ctx).V(4).Info("Startup taints not removed yet", "node", node.Name, "err", err)
	}
}
