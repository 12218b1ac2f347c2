package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/resourceclaim"
	"k8s.io/kubernetes/pkg/features"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/sandbox/dradriver"
)

// newResourceClaimController builds kube-controller-manager's resourceclaim controller as its
// descriptor does: it creates each pod's ResourceClaims from their templates, records them in
// pod.status.resourceClaimStatuses (the scheduler waits for that), and frees a claim's
// reservation once its pod is done. It shares the workload controllers' pod informer.
func newResourceClaimController(ctx context.Context, kube kubernetes.Interface, factory informers.SharedInformerFactory) (*resourceclaim.Controller, error) {
	gates := utilfeature.DefaultFeatureGate
	// No PodGroup informer: the sandbox leaves DRAWorkloadResourceClaims at its default, off,
	// under which the controller never reads one.
	c, err := resourceclaim.NewController(klog.FromContext(ctx), resourceclaim.Features{
		AdminAccess:            gates.Enabled(features.DRAAdminAccess),
		PrioritizedList:        gates.Enabled(features.DRAPrioritizedList),
		WorkloadResourceClaims: gates.Enabled(features.DRAWorkloadResourceClaims),
	}, kube, factory.Core().V1().Pods(), nil, factory.Resource().V1().ResourceClaims(), factory.Resource().V1().ResourceClaimTemplates())
	if err != nil {
		return nil, fmt.Errorf("creating the resourceclaim controller: %w", err)
	}
	return c, nil
}

// startDRADriver runs the stand-in DRA driver (package dradriver) for the nodes kwok plays.
func (c *Cluster) startDRADriver(ctx context.Context, kube kubernetes.Interface) error {
	d, err := dradriver.New(dradriver.Options{Kube: kube, Devices: c.nodeDevices, Serves: playedByKwok})
	if err != nil {
		return fmt.Errorf("creating the stand-in DRA driver: %w", err)
	}
	go d.Run(klog.NewContext(ctx, klog.FromContext(ctx).WithName("dra-driver")), 2)
	return nil
}

// playedByKwok: kwok plays the node's kubelet, and it has a type to take devices from.
func playedByKwok(node *corev1.Node) bool {
	return node.Annotations[fake.KwokNodeAnnotation] == "fake" && node.Labels[corev1.LabelInstanceTypeStable] != ""
}

// nodeDevices are the devices of the node's instance type, as the cloud Tailor plans with has
// them: from the type its NodePool offers (so that a NodePool's own device declarations count),
// else, for a node no NodePool launched or whose pool is gone, from the cloud's catalog.
func (c *Cluster) nodeDevices(ctx context.Context, node *corev1.Node) ([]cloud.DeviceSet, error) {
	c.mu.Lock()
	provider := c.Cloud
	c.mu.Unlock()
	if provider == nil {
		return nil, fmt.Errorf("the sandbox has no cloud yet")
	}
	name := node.Labels[corev1.LabelInstanceTypeStable]
	if byType := c.poolDevices(ctx, provider, node.Labels[karpv1.NodePoolLabelKey]); byType != nil {
		if sets, ok := byType[name]; ok {
			return sets, nil
		}
	}
	if catalog, ok := provider.(cloud.DeviceCatalog); ok {
		sets, _, err := catalog.InstanceTypeDevices(ctx, name)
		return sets, err
	}
	return nil, nil
}

// poolDevicesTTL is how long the devices of a NodePool's types are reused: a burst of nodes
// registering asks for them once, not once a node, each a copy of the catalog.
const poolDevicesTTL = 10 * time.Second

type poolDevices struct {
	at     time.Time
	byType map[string][]cloud.DeviceSet
}

// poolDevices are the devices of each type the cloud offers the named NodePool; nil when there is
// no such pool or the cloud cannot say (its node class not ready, say).
func (c *Cluster) poolDevices(ctx context.Context, provider cloud.CloudProvider, poolName string) map[string][]cloud.DeviceSet {
	if poolName == "" {
		return nil
	}
	c.devicesMu.Lock()
	cached, ok := c.devicesByPool[poolName]
	c.devicesMu.Unlock()
	if ok && time.Since(cached.at) < poolDevicesTTL {
		return cached.byType
	}
	pool, err := c.Tailor.KarpenterV1().NodePools().Get(ctx, poolName, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	types, err := provider.InstanceTypes(ctx, pool)
	if err != nil {
		return nil
	}
	byType := make(map[string][]cloud.DeviceSet, len(types))
	for _, it := range types {
		byType[it.Name] = it.Devices
	}
	c.devicesMu.Lock()
	if c.devicesByPool == nil {
		c.devicesByPool = map[string]poolDevices{}
	}
	c.devicesByPool[poolName] = poolDevices{at: time.Now(), byType: byType}
	c.devicesMu.Unlock()
	return byType
}
