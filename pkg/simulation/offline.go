package simulation

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

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
	// The DRA manager's claim cache takes the informer's claims through an event handler, which
	// may not have run yet when the informer says it has synced: wait for it, so that a plan sees
	// every claim there is.
	lister := factory.Resource().V1().ResourceClaims().Lister()
	if err := wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
		want, err := lister.List(labels.Everything())
		if err != nil {
			return false, err
		}
		got, err := sim.DRA().ResourceClaims().List()
		return err == nil && len(got) >= len(want), nil
	}); err != nil {
		return nil, fmt.Errorf("building the offline simulator: the ResourceClaims did not sync: %w", err)
	}
	return sim, nil
}
