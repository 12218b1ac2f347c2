package lifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcelisters "k8s.io/client-go/listers/resource/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// draDevices tells initialization about the extended resources a DeviceClass backs with DRA
// devices (its spec.extendedResourceName, DRAExtendedResource). A node never advertises such a
// resource in its allocatable: a cluster that maps it to a DRA driver runs no device plugin for
// it, and the scheduler serves it from the node's ResourceSlices instead. So for those the claim
// waits for the node's devices to be published, not for the resource to appear.
type draDevices struct {
	classes resourcelisters.DeviceClassLister
	slices  resourcelisters.ResourceSliceLister
}

// backing names the DeviceClass that backs the resource, "" if none does (or the listers are
// not wired, as in a scheduler without DRA).
func (d draDevices) backing(name corev1.ResourceName) string {
	if d.classes == nil || d.slices == nil {
		return ""
	}
	classes, err := d.classes.List(labels.Everything())
	if err != nil {
		return ""
	}
	for _, c := range classes {
		if r := c.Spec.ExtendedResourceName; r != nil && *r == string(name) {
			return c.Name
		}
	}
	return ""
}

// published reports whether some DRA driver has published devices for the node.
func (d draDevices) published(node string) bool {
	all, err := d.slices.List(labels.Everything())
	if err != nil {
		return false
	}
	for _, s := range all {
		if s.Spec.NodeName != nil && *s.Spec.NodeName == node && len(s.Spec.Devices) > 0 {
			return true
		}
	}
	return false
}

// draRecheck is how soon a claim waiting for its node's DRA devices is looked at again.
const draRecheck = 2 * time.Second

// recheck is draRecheck when the claim was launched for a resource a DeviceClass backs, else 0.
func (d draDevices) recheck(claim *karpv1.NodeClaim) time.Duration {
	for name, q := range claim.Status.Capacity {
		if isExtended(name) && !q.IsZero() && d.backing(name) != "" {
			return draRecheck
		}
	}
	return 0
}
