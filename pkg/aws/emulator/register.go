package emulator

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// NodeRegistrar returns an OnLaunch hook that registers each booted instance's Node (NodeFor)
// with the API server, as its kubelet would; kwok then keeps it Ready. Instances whose user data
// cannot be read never register, as on EC2. Failures are retried with backoff a bounded number of
// times, so a broken API server does not leak goroutines for the life of the process.
func NodeRegistrar(kube kubernetes.Interface) func(Launch) {
	return func(l Launch) {
		logger := klog.Background().WithValues("instance", l.Instance.ID, "node", l.NodeName)
		if l.BootstrapErr != nil {
			logger.Error(l.BootstrapErr, "emulated instance cannot join: its user data is unreadable")
			return
		}
		wait := 100 * time.Millisecond
		for attempt := 0; attempt < 8; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := kube.CoreV1().Nodes().Create(ctx, NodeFor(l), metav1.CreateOptions{})
			cancel()
			if err == nil || apierrors.IsAlreadyExists(err) {
				return
			}
			logger.Error(fmt.Errorf("registering node: %w", err), "emulated kubelet could not register", "attempt", attempt)
			time.Sleep(wait)
			wait *= 2
		}
	}
}
