package cloud

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
)

// Runnable is a loop a cloud provider brings along, such as a status controller for its node
// class or an interruption-queue consumer. Run blocks until ctx ends.
type Runnable interface {
	Run(ctx context.Context) error
}

// ControllerDeps is what a provider's controllers may use of the cluster.
type ControllerDeps struct {
	Kube    kubernetes.Interface
	Clients clientset.Interface
	// Recorder may be nil, in which case no Events are written.
	Recorder events.EventRecorder
}

// ControllerProvider is implemented by clouds that have controllers of their own. The host
// (the operator, once it leads) runs each of them for as long as it runs Tailor's own.
type ControllerProvider interface {
	Controllers(deps ControllerDeps) []Runnable
}
