package dradriver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

// sync makes the slices of the named node what its type says: those of cloud.ResourceSlices
// while the node exists and is served, none once it is gone. Every write is conditional on what
// the cache holds, so a repeated or stale event changes nothing.
func (d *Driver) sync(ctx context.Context, nodeName string) error {
	node, err := d.nodes.Get(nodeName)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if node == nil {
		d.forget(nodeName)
	}
	var want []*resourcev1.ResourceSlice
	// A node being drained still runs its drivers: its slices go with the Node object, as the
	// kubelet's go when it stops.
	if node != nil && d.opts.Serves(node) {
		sets, err := d.devicesOf(ctx, node)
		if err != nil {
			return fmt.Errorf("finding the devices of node %s (%s): %w", node.Name, node.Labels[corev1.LabelInstanceTypeStable], err)
		}
		want = cloud.ResourceSlices(node.Name, sets)
		for _, s := range want {
			s.Labels = map[string]string{ManagedByLabel: ManagedBy}
			// The garbage collector removes them with the node should this driver miss its
			// deletion, as it does the kubelet's.
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true)}}
		}
	}
	objs, err := d.sliceIndex.ByIndex(byNode, nodeName)
	if err != nil {
		return err
	}
	have := map[string]*resourcev1.ResourceSlice{}
	for _, o := range objs {
		s := o.(*resourcev1.ResourceSlice)
		have[s.Name] = s
	}
	changed, err := d.publish(ctx, want, have)
	if err != nil {
		return err
	}
	deleted, err := d.deleteStale(ctx, want, have)
	if err != nil {
		return err
	}
	logSync(ctx, nodeName, node, changed, deleted)
	return nil
}

// publish creates or updates the slices of want that differ from have's; it returns those.
func (d *Driver) publish(ctx context.Context, want []*resourcev1.ResourceSlice, have map[string]*resourcev1.ResourceSlice) ([]*resourcev1.ResourceSlice, error) {
	client := d.opts.Kube.ResourceV1().ResourceSlices()
	var changed []*resourcev1.ResourceSlice
	for _, s := range want {
		old, ok := have[s.Name]
		switch {
		case !ok:
			_, err := client.Create(ctx, s, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// The cache has not seen it yet; its event brings the node back to compare.
				continue
			}
			if err != nil {
				return changed, fmt.Errorf("publishing ResourceSlice %s: %w", s.Name, err)
			}
		case !sameSlice(old, s):
			upd := old.DeepCopy()
			upd.Labels, upd.OwnerReferences = s.Labels, s.OwnerReferences
			// The pool's generation goes up so that the scheduler does not take the old and the
			// new devices as one pool.
			s.Spec.Pool.Generation = old.Spec.Pool.Generation + 1
			upd.Spec = s.Spec
			if _, err := client.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
				return changed, fmt.Errorf("updating ResourceSlice %s: %w", s.Name, err)
			}
		default:
			continue
		}
		changed = append(changed, s)
	}
	return changed, nil
}

// deleteStale deletes the slices of have that want does not name.
func (d *Driver) deleteStale(ctx context.Context, want []*resourcev1.ResourceSlice, have map[string]*resourcev1.ResourceSlice) (int, error) {
	keep := map[string]bool{}
	for _, s := range want {
		keep[s.Name] = true
	}
	deleted := 0
	for name, s := range have {
		if keep[name] {
			continue
		}
		err := d.opts.Kube.ResourceV1().ResourceSlices().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return deleted, fmt.Errorf("deleting ResourceSlice %s: %w", name, err)
		}
		deleted++
	}
	return deleted, nil
}

// sameSlice compares what the driver sets, ignoring the pool's generation, which it bumps.
func sameSlice(have, want *resourcev1.ResourceSlice) bool {
	h, w := have.Spec.DeepCopy(), want.Spec.DeepCopy()
	h.Pool.Generation, w.Pool.Generation = 0, 0
	return equality.Semantic.DeepEqual(h, w) && have.Labels[ManagedByLabel] == ManagedBy
}

func logSync(ctx context.Context, nodeName string, node *corev1.Node, changed []*resourcev1.ResourceSlice, deleted int) {
	logger := klog.FromContext(ctx)
	if len(changed) > 0 {
		var drivers []string
		devices := 0
		for _, s := range changed {
			drivers = append(drivers, s.Spec.Driver)
			devices += len(s.Spec.Devices)
		}
		logger.Info("Stand-in DRA driver published the node's ResourceSlices", "node", nodeName,
			"instanceType", node.Labels[corev1.LabelInstanceTypeStable], "drivers", drivers, "devices", devices)
	}
	if deleted > 0 {
		logger.Info("Stand-in DRA driver deleted ResourceSlices of a node gone or no longer served", "node", nodeName, "slices", deleted)
	}
}
