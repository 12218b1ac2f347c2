package dra

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

// claimTracker serves the base's claims with the plan's allocations on top. The plugin's
// Reserve signals an allocation here (SignalClaimPendingAllocation); the simulation never
// unreserves or binds, so nothing here is pending: an allocation the plan made is served as an
// allocated claim, which the pods after it that share the claim must follow to its node.
type claimTracker struct{ m *Manager }

var _ fwk.ResourceClaimTracker = claimTracker{}

// errBinding: the simulation runs no PreBind, so no claim is ever written.
var errBinding = errors.New("the simulation does not bind pods: no claim is written")

func (t claimTracker) List() ([]*resourceapi.ResourceClaim, error) {
	base, err := t.m.base.ResourceClaims().List()
	if err != nil {
		return nil, err
	}
	t.m.mu.RLock()
	defer t.m.mu.RUnlock()
	if len(t.m.claims) == 0 && len(t.m.released) == 0 {
		return base, nil
	}
	out := make([]*resourceapi.ResourceClaim, 0, len(base))
	seen := map[types.UID]bool{}
	for _, c := range base {
		if planned, ok := t.m.claims[c.UID]; ok {
			c = planned
			seen[c.UID] = true
		} else {
			c = t.m.servedClaim(c)
		}
		out = append(out, c)
	}
	for uid, c := range t.m.claims {
		if !seen[uid] {
			out = append(out, c)
		}
	}
	return out, nil
}

func (t claimTracker) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	t.m.mu.RLock()
	uid, ok := t.m.byName[namespace+"/"+name]
	planned := t.m.claims[uid]
	t.m.mu.RUnlock()
	if ok {
		return planned, nil
	}
	c, err := t.m.base.ResourceClaims().Get(namespace, name)
	if err != nil || c == nil {
		return c, err
	}
	t.m.mu.RLock()
	defer t.m.mu.RUnlock()
	return t.m.servedClaim(c), nil
}

func (t claimTracker) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	base, err := t.m.base.ResourceClaims().ListAllAllocatedDevices()
	if err != nil {
		return nil, err
	}
	t.m.mu.RLock()
	defer t.m.mu.RUnlock()
	out := withoutReleased(base, t.m.releasedDevices).Clone().Union(t.m.devices)
	for id := range t.m.releasedShared {
		out.Delete(id.GetDeviceID())
	}
	for id := range t.m.shared {
		out.Insert(id.GetDeviceID())
	}
	return out, nil
}

func (t claimTracker) GatherAllocatedState() (*structured.AllocatedState, error) {
	base, err := t.m.base.ResourceClaims().GatherAllocatedState()
	if err != nil || base == nil {
		return base, err
	}
	t.m.mu.RLock()
	defer t.m.mu.RUnlock()
	// A released claim's consumed capacity is not taken out of AggregatedCapacity: consumable
	// capacity is not planned (docs/concepts/devices.md).
	out := &structured.AllocatedState{
		AllocatedDevices:         withoutReleased(base.AllocatedDevices, t.m.releasedDevices).Clone().Union(t.m.devices),
		AllocatedSharedDeviceIDs: withoutReleased(base.AllocatedSharedDeviceIDs, t.m.releasedShared),
		AggregatedCapacity:       base.AggregatedCapacity,
	}
	if len(t.m.shared) > 0 {
		out.AllocatedSharedDeviceIDs = out.AllocatedSharedDeviceIDs.Clone().Union(t.m.shared)
	}
	return out, nil
}

// SignalClaimPendingAllocation records the allocation Reserve made: at once, or with the others
// of a Gather.
func (t claimTracker) SignalClaimPendingAllocation(uid types.UID, claim *resourceapi.ResourceClaim) error {
	if claim == nil || claim.Status.Allocation == nil {
		return errors.New("no allocation to record")
	}
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.m.gathering {
		t.m.gathered = append(t.m.gathered, claim)
		return nil
	}
	t.m.recordLocked(uid, claim, nil)
	return nil
}

// GetPendingAllocation answers for the scheduler's own allocations in flight: a claim the
// scheduler is binding is not the plan's to allocate.
func (t claimTracker) GetPendingAllocation(uid types.UID) *resourceapi.AllocationResult {
	return t.m.base.ResourceClaims().GetPendingAllocation(uid)
}

// MaybeRemoveClaimPendingAllocation removes nothing: the plan's allocations last until Reset,
// and the scheduler's are not the simulation's to remove.
func (t claimTracker) MaybeRemoveClaimPendingAllocation(types.UID, bool) bool { return false }

func (t claimTracker) AssumeClaimAfterAPICall(*resourceapi.ResourceClaim) error { return errBinding }

func (t claimTracker) AssumedClaimRestore(string, string) {}

// Gather runs fn, which reserves one pod's claims on views of the node named node, one view per
// instance type the node may still launch as (ViewName), and records what it reserved together
// once fn returns: each view's allocation takes its devices from that type's pool, and the claim
// is served as allocated on node and on every view of it, whatever type it launches as. Recording only at the end keeps the
// claims unallocated for every view fn weighs.
func (m *Manager) Gather(node string, fn func() error) error {
	m.mu.Lock()
	m.gathering, m.gathered = true, nil
	m.mu.Unlock()
	err := fn()
	m.mu.Lock()
	defer m.mu.Unlock()
	gathered := m.gathered
	m.gathering, m.gathered = false, nil
	if err != nil {
		return err
	}
	// The pods that share a claim follow it to the node, as whichever type it is shown.
	names := []string{node}
	for _, c := range gathered {
		if ns := c.Status.Allocation.NodeSelector; ns != nil {
			for _, t := range ns.NodeSelectorTerms {
				for _, f := range t.MatchFields {
					names = append(names, f.Values...)
				}
			}
		}
	}
	for _, c := range gathered {
		m.recordLocked(c.UID, c, names)
	}
	return nil
}

// recordLocked records claim, allocated by the plan, under uid: its devices as taken, and the
// claim as allocated on the nodes named (when set), so the pods that share it are held there.
func (m *Manager) recordLocked(uid types.UID, claim *resourceapi.ResourceClaim, nodes []string) {
	for _, r := range claim.Status.Allocation.Devices.Results {
		if ptr.Deref(r.AdminAccess, false) {
			continue // admin access takes no device from others
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID != nil {
			m.shared.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
		} else {
			m.devices.Insert(id)
		}
	}
	if _, ok := m.claims[uid]; ok || uid == "" || claim.Annotations[resourceapi.ExtendedResourceClaimAnnotation] == "true" {
		// Recorded already; or the plugin's own claim for a pod's extended resources backed by
		// devices, which no other pod shares and which, served as allocated, would make the
		// plugin refuse the pod when the plan weighs it again (a claim from an earlier cycle).
		return
	}
	c := claim.DeepCopy()
	if len(nodes) > 0 {
		// A field selector on metadata.name takes one value per term; terms are ORed.
		ns := &corev1.NodeSelector{}
		for _, n := range nodes {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}},
			})
		}
		c.Status.Allocation.NodeSelector = ns
	}
	m.claims[uid] = c
	m.byName[c.Namespace+"/"+c.Name] = uid
}

// Allocated returns the claim as the plan allocated it, or nil when the plan has not.
func (m *Manager) Allocated(namespace, name string) *resourceapi.ResourceClaim {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if uid, ok := m.byName[namespace+"/"+name]; ok {
		return m.claims[uid]
	}
	return nil
}
