// Package kubelet registers the fake cloud's instances as Nodes with a real API server. It is
// apart from package fake because it speaks client-go: the fake cloud's catalog is what the AWS
// emulator describes, and keeping package fake free of client-go keeps the emulator's fuzz target
// cheap to build with coverage instrumentation (see FUZZ_SHORT_PACKAGES in the Makefile).
package kubelet

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// Joiner registers the Node a real kubelet would (fake.NodeFor), so everything downstream
// (registration, initialization, binding) runs exactly as it does against a real cloud; kwok
// then plays the kubelet (fake.KwokNodeAnnotation).
type Joiner struct {
	Client kubernetes.Interface
}

var _ fake.Joiner = (*Joiner)(nil)

// Join creates the node; a node that already exists counts as registered, so retries are safe.
func (j *Joiner) Join(ctx context.Context, instance fake.Instance) error {
	node := fake.NodeFor(instance)
	if _, err := j.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %q for %s: %w", node.Name, instance.ProviderID, err)
	}
	return nil
}
