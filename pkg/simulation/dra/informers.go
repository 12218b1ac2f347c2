package dra

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// FromInformers builds the scheduler's own kind of DRA manager over factory, for a simulation
// that runs outside the scheduler (tailor plan, tests): the same claim cache, slice tracker and
// device class lister the scheduler builds, read from the factory's informers. It registers
// those informers, so the caller starts the factory afterwards. DeviceTaintRules are not
// applied to the slices: the tracker then serves them as published.
func FromInformers(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (fwk.SharedDRAManager, error) {
	logger := klog.FromContext(ctx)
	claims := assumecache.NewAssumeCache(logger, factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	tracker, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{
		SliceInformer: factory.Resource().V1().ResourceSlices(),
		KubeClient:    client,
	})
	if err != nil {
		return nil, fmt.Errorf("tracking ResourceSlices for the simulation: %w", err)
	}
	m := dynamicresources.NewDRAManager(ctx, claims, tracker, factory)
	// The scheduler feeds the cache that maps extended resources to DeviceClasses from the
	// DeviceClass informer (its event handlers); so does this manager.
	if cache, ok := m.DeviceClassResolver().(*extendedresourcecache.ExtendedResourceCache); ok && cache != nil {
		if _, err := factory.Resource().V1().DeviceClasses().Informer().AddEventHandler(cache); err != nil {
			return nil, fmt.Errorf("watching DeviceClasses for the simulation: %w", err)
		}
	}
	return m, nil
}
