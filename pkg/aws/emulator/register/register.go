// Package register registers the AWS emulator's booted instances as Nodes with a real API
// server, as their kubelets would. It is apart from package emulator because it speaks
// client-go, which would otherwise be compiled, coverage-instrumented, into the emulator's fuzz
// target (see FUZZ_SHORT_PACKAGES in the Makefile).
package register

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
)

// Nodes returns an OnLaunch hook that registers each booted instance's Node (emulator.NodeFor)
// with the API server, as its kubelet would; kwok then keeps it Ready. Instances whose user data
// cannot be read never register, as on EC2. Failures are retried with backoff a bounded number of
// times, so a broken API server does not leak goroutines for the life of the process.
func Nodes(kube kubernetes.Interface) func(emulator.Launch) {
	return func(l emulator.Launch) {
		logger := klog.Background().WithValues("instance", l.Instance.ID, "node", l.NodeName)
		if l.BootstrapErr != nil {
			logger.Error(l.BootstrapErr, "emulated instance cannot join: its user data is unreadable")
			return
		}
		wait := 100 * time.Millisecond
		for attempt := 0; attempt < 8; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			node, err := withoutDRABackedResources(ctx, kube, emulator.NodeFor(l))
			if err == nil {
				_, err = kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			}
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

// withoutDRABackedResources drops from the node's capacity and allocatable every extended
// resource a DeviceClass backs with DRA devices (its spec.extendedResourceName, such as
// nvidia.com/gpu): a cluster that maps the resource to its DRA driver does not also run the
// device plugin that would advertise it, and the scheduler serves a resource from DRA devices only
// on nodes that do not advertise it. The sandbox's stand-in DRA driver publishes the devices.
func withoutDRABackedResources(ctx context.Context, kube kubernetes.Interface, node *corev1.Node) (*corev1.Node, error) {
	classes, err := kube.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	for _, c := range classes.Items {
		if name := c.Spec.ExtendedResourceName; name != nil {
			delete(node.Status.Capacity, corev1.ResourceName(*name))
			delete(node.Status.Allocatable, corev1.ResourceName(*name))
		}
	}
	return node, nil
}
