package dra

import (
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// ReleaseHeldOnlyBy releases, for the rest of the plan, every allocated claim of the cluster that
// is reserved for pods all of which are among pending: those pods are bound elsewhere and the
// plan moves them (a disruption's probe weighs the pods of the nodes it would remove). Once they
// are evicted, the resourceclaim controller drops their reservations and the claim is deallocated
// (or deleted with its pod, when a template made it), so wherever they go, the claim is
// allocated anew from that node's devices. A released claim is served unallocated and its
// devices free; a claim that some pod not moved still holds stays where it is, and holds the
// pods that share it there.
func (m *Manager) ReleaseHeldOnlyBy(pending []*corev1.Pod) {
	moving := make(map[types.UID]bool, len(pending))
	for _, p := range pending {
		if len(p.Spec.ResourceClaims) > 0 {
			moving[p.UID] = true
		}
	}
	if len(moving) == 0 {
		return
	}
	claims, err := m.base.ResourceClaims().List()
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range claims {
		if c.Status.Allocation == nil || len(c.Status.ReservedFor) == 0 {
			continue
		}
		held := true
		for _, r := range c.Status.ReservedFor {
			held = held && moving[r.UID]
		}
		if !held {
			continue
		}
		free := c.DeepCopy()
		for _, r := range free.Status.Allocation.Devices.Results {
			if ptr.Deref(r.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID != nil {
				m.releasedShared.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			} else {
				m.releasedDevices.Insert(id)
			}
		}
		free.Status.Allocation, free.Status.ReservedFor = nil, nil
		m.released[c.UID] = free
	}
}

// servedClaim is the claim as the plan sees it: released, or as the base has it.
func (m *Manager) servedClaim(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	if free, ok := m.released[c.UID]; ok {
		return free
	}
	return c
}

// withoutReleased returns allocated less the devices of released claims (a copy when it differs).
func withoutReleased[T comparable](allocated, released sets.Set[T]) sets.Set[T] {
	if len(released) == 0 || len(allocated) == 0 {
		return allocated
	}
	return allocated.Clone().Delete(released.UnsortedList()...)
}
