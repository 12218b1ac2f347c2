package dra

import (
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// Unallocated returns the pod's claims that exist and that neither the cluster nor the plan has
// allocated yet. A claim not created yet is left out: the scheduler does not try the pod until it
// is (the plan records such a pod as waiting).
func (m *Manager) Unallocated(pod *corev1.Pod) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	for i := range pod.Spec.ResourceClaims {
		name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil || name == nil {
			continue
		}
		c, err := claimTracker{m}.Get(pod.Namespace, *name)
		if err != nil || c == nil || c.Status.Allocation != nil {
			continue
		}
		out = append(out, c)
	}
	return out
}

// HoldOn records claims as allocated on the node named node, with no device taken: for a pod an
// earlier plan sent to a node in flight whose devices the overlay does not know (its instance type
// is not settled yet). The scheduler will allocate the claims there once the node is up, so the
// pods that share them are planned to follow them there, not onto new capacity of their own.
func (m *Manager) HoldOn(claims []*resourceapi.ResourceClaim, node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range claims {
		held := c.DeepCopy()
		held.Status.Allocation = &resourceapi.AllocationResult{}
		m.recordLocked(c.UID, held, []string{node})
	}
}
