// Package controllers is how a cloud provider hands its own controllers to the host that runs
// them. It is apart from package cloud because it speaks client-go: package cloud, and the fake
// cloud and the AWS emulator built on it, stay free of client-go, so their fuzz targets are cheap
// to build with coverage instrumentation (see FUZZ_SHORT_PACKAGES in the Makefile).
package controllers

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/tailor-sh/tailor/pkg/cloud"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	tailorinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions"
)

// Deps is what a provider's controllers may use of the cluster.
type Deps struct {
	Kube    kubernetes.Interface
	Clients clientset.Interface
	// Informers, if set, is the host's factory of informers of Tailor's resources: a provider may
	// read its node classes from it rather than ask the API server each time.
	Informers tailorinformers.SharedInformerFactory
	// Recorder may be nil, in which case no Events are written.
	Recorder events.EventRecorder
}

// Provider is implemented by clouds that have controllers of their own. The host (the operator,
// once it leads) runs each of them for as long as it runs Tailor's own.
type Provider interface {
	Controllers(deps Deps) []cloud.Runnable
}
