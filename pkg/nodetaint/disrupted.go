// Package nodetaint puts karpenter.sh/disrupted:NoSchedule on a node and takes it off again. The
// forceful path, the disruption loop and the termination finalizer all taint nodes this way.
package nodetaint

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
	corelisters "k8s.io/client-go/listers/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// IsDisrupted reports whether the node carries karpenter.sh/disrupted:NoSchedule.
func IsDisrupted(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&karpv1.DisruptedNoScheduleTaint) })
}

// SetDisrupted adds (on true) or removes (on false) the taint, and reports whether it wrote. The
// patch carries the node's resourceVersion, so a concurrent change of the taints is not
// overwritten: the caller gets a conflict and retries from a fresh read.
func SetDisrupted(ctx context.Context, kube kubernetes.Interface, node *corev1.Node, on bool) (bool, error) {
	if IsDisrupted(node) == on {
		return false, nil
	}
	taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
		return t.MatchTaint(&karpv1.DisruptedNoScheduleTaint)
	})
	if on {
		taints = append(taints, karpv1.DisruptedNoScheduleTaint)
	}
	if taints == nil {
		taints = []corev1.Taint{}
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"spec":     map[string]any{"taints": taints},
	})
	if err != nil {
		return false, err
	}
	_, err = kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err == nil, err
}

// WaitVisible waits, briefly, until the lister shows the node with the taint on (or off) or
// gone: plans that follow read the node from the informers, and a plan made from the node as it
// was would not see its pods as needing room.
func WaitVisible(ctx context.Context, nodes corelisters.NodeLister, name string, on bool) {
	// The watch event normally arrives within milliseconds.
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		n, err := nodes.Get(name)
		return err != nil || IsDisrupted(n) == on, nil
	})
}
