package simulation

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// NewOffline builds a Simulator of kube-scheduler's default profile under schedulerName with no
// cluster behind it: its plugins read objects (Namespaces, PersistentVolumeClaims, StorageClasses,
// CSINodes, ...) from an in-memory clientset that holds only these. It is for what-if tools and
// tests. Its informers run until ctx ends; it returns once they have synced.
func NewOffline(ctx context.Context, schedulerName string, objects ...runtime.Object) (*Simulator, error) {
	profile, err := DefaultProfile(schedulerName)
	if err != nil {
		return nil, err
	}
	client := kubefake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	sim, err := New(ctx, profile, Deps{Client: client, InformerFactory: factory})
	if err != nil {
		return nil, err
	}
	// New registered the informers its plugins read; only now does Start run them.
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("building the offline simulator: the informer for %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	return sim, nil
}
