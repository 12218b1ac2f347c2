// Package dra is the DRA manager of the simulation: what the scheduler's DynamicResources plugin
// reads (ResourceSlices, ResourceClaims, DeviceClasses) when the simulation asks it whether a
// pod's claims can be allocated on a node. It serves the cluster's objects from a base manager
// (the scheduler's own, or one over an informer factory) and adds an overlay for one plan: the
// slices that nodes which do not exist yet will publish (template nodes of instance types, nodes
// in flight whose driver has not published yet), and the claims the plan has allocated, so that
// devices planned for one pod are not planned for another and a claim shared by several pods is
// allocated once. The overlay never writes to the base: the scheduler's in-flight allocations
// stay its own.
package dra

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Manager is a fwk.SharedDRAManager: the base's objects with the current plan's overlay on top.
// Filter plugins read it from several goroutines; the overlay is changed only between questions,
// by the one planner that owns the simulation.
type Manager struct {
	base fwk.SharedDRAManager

	mu sync.RWMutex
	// nodes are nodes of the plan (in flight) with the devices their type's drivers will publish.
	nodes map[string][]cloud.DeviceSet
	// templates are nodes that may still launch as any of several instance types: per node name,
	// the devices of each type (by instance type name).
	templates map[string]map[string][]cloud.DeviceSet
	// built caches the slices of each overlay node; list is all of them, nil when stale.
	built map[string][]*resourceapi.ResourceSlice
	list  []*resourceapi.ResourceSlice
	// claims are the claims this plan allocated, by UID, as the plugin reads them: allocated on
	// the node the plan put them on. byName finds them by namespace/name.
	claims map[types.UID]*resourceapi.ResourceClaim
	byName map[string]types.UID
	// devices and shared are the devices those allocations hold, on every type the node may
	// launch as.
	devices sets.Set[structured.DeviceID]
	shared  sets.Set[structured.SharedDeviceID]
	// gathering collects the allocations Reserve signals, to be recorded together (Gather).
	gathering bool
	gathered  []*resourceapi.ResourceClaim
	// released are the cluster's claims the plan serves unallocated, by UID, and
	// releasedDevices and releasedShared the devices they held (release.go).
	released        map[types.UID]*resourceapi.ResourceClaim
	releasedDevices sets.Set[structured.DeviceID]
	releasedShared  sets.Set[structured.SharedDeviceID]
}

var _ fwk.SharedDRAManager = &Manager{}

// New returns a manager over base with an empty overlay.
func New(base fwk.SharedDRAManager) *Manager {
	m := &Manager{base: base}
	m.Reset()
	return m
}

// Reset empties the overlay: a plan starts from the cluster as it is.
func (m *Manager) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes = map[string][]cloud.DeviceSet{}
	m.templates = map[string]map[string][]cloud.DeviceSet{}
	m.built = map[string][]*resourceapi.ResourceSlice{}
	m.list = nil
	m.claims = map[types.UID]*resourceapi.ResourceClaim{}
	m.byName = map[string]types.UID{}
	m.devices = sets.New[structured.DeviceID]()
	m.shared = sets.New[structured.SharedDeviceID]()
	m.gathering, m.gathered = false, nil
	m.released = map[types.UID]*resourceapi.ResourceClaim{}
	m.releasedDevices = sets.New[structured.DeviceID]()
	m.releasedShared = sets.New[structured.SharedDeviceID]()
}

// SetNode says that the node named name will publish sets once its drivers run (a node in
// flight). Once a driver has published slices for the node, the cluster's slices win and these
// are not served. Nil sets forget the node.
func (m *Manager) SetNode(name string, sets []cloud.DeviceSet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(sets) == 0 {
		delete(m.nodes, name)
	} else {
		m.nodes[name] = sets
	}
	delete(m.built, name)
	m.list = nil
}

// SetTemplate says that the node named name may launch as any of the instance types of byType
// (instance type name to the devices its drivers publish); its devices are those of the type it
// is shown as, by its node.kubernetes.io/instance-type label. Nil forgets the node.
func (m *Manager) SetTemplate(name string, byType map[string][]cloud.DeviceSet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(byType) == 0 {
		delete(m.templates, name)
	} else {
		m.templates[name] = byType
	}
	delete(m.built, name)
	m.list = nil
}

// ViewName is the name under which DynamicResources is shown node, a template node of the
// overlay shown as one of its instance types (by its node.kubernetes.io/instance-type label):
// the node's name and the type's, joined. Each type's devices are published for that name, so
// the allocator reaches a type's devices by name alone, as it does a real node's, and a pod
// planned on the node as one type takes nothing from it as another. ok is false for every other
// node, and for a template whose type is not settled (no label): the plugin sees those as they
// are, where a claim the plan allocated on the node is available and no device of any type is.
func (m *Manager) ViewName(node *corev1.Node) (name string, ok bool) {
	typ, labelled := node.Labels[corev1.LabelInstanceTypeStable]
	if !labelled {
		return "", false
	}
	m.mu.RLock()
	_, ok = m.templates[node.Name]
	m.mu.RUnlock()
	if !ok {
		return "", false
	}
	// A type without devices gets a view all the same, which no slice serves, as none will serve
	// the node.
	return viewName(node.Name, typ), true
}

func viewName(node, typ string) string { return node + "." + typ }

func (m *Manager) ResourceClaims() fwk.ResourceClaimTracker { return claimTracker{m} }
func (m *Manager) ResourceSlices() fwk.ResourceSliceLister  { return sliceLister{m} }
func (m *Manager) DeviceClasses() fwk.DeviceClassLister     { return m.base.DeviceClasses() }
func (m *Manager) DeviceClassResolver() fwk.DeviceClassResolver {
	return m.base.DeviceClassResolver()
}
func (m *Manager) PodGroups() fwk.PodGroupLister { return m.base.PodGroups() }

// sliceLister lists the cluster's slices and the overlay's.
type sliceLister struct{ m *Manager }

func (l sliceLister) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	base, err := l.m.base.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, err
	}
	overlay := l.m.overlaySlices(base)
	if len(overlay) == 0 {
		return base, nil
	}
	return append(append(make([]*resourceapi.ResourceSlice, 0, len(base)+len(overlay)), base...), overlay...), nil
}

// overlaySlices returns the overlay's slices, less those of nodes in flight for which the
// cluster already has slices: their drivers have published, and the pool would be counted twice.
func (m *Manager) overlaySlices(base []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	m.mu.RLock()
	list, nodes := m.list, len(m.nodes)
	m.mu.RUnlock()
	if list == nil {
		list = m.buildList()
	}
	if nodes == 0 || len(base) == 0 {
		return list
	}
	published := map[string]bool{}
	for _, s := range base {
		if s.Spec.NodeName != nil {
			published[*s.Spec.NodeName] = true
		}
	}
	out := make([]*resourceapi.ResourceSlice, 0, len(list))
	for _, s := range list {
		if s.Spec.NodeName == nil || !published[*s.Spec.NodeName] {
			out = append(out, s)
		}
	}
	return out
}

// buildList builds the slices of the overlay's nodes not built yet, and caches their list.
func (m *Manager) buildList() []*resourceapi.ResourceSlice {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.list != nil {
		return m.list
	}
	list := []*resourceapi.ResourceSlice{}
	for name, sets := range m.nodes {
		if _, ok := m.built[name]; !ok {
			m.built[name] = cloud.ResourceSlices(name, sets)
		}
		list = append(list, m.built[name]...)
	}
	for name, byType := range m.templates {
		if _, ok := m.built[name]; !ok {
			m.built[name] = templateSlices(name, byType)
		}
		list = append(list, m.built[name]...)
	}
	m.list = list
	return list
}

// templateSlices are the slices of a node that may launch as any type of byType: each type's, as
// its drivers will publish them, for the node's view as that type (ViewName).
func templateSlices(name string, byType map[string][]cloud.DeviceSet) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	for typ, sets := range byType {
		out = append(out, cloud.ResourceSlices(viewName(name, typ), sets)...)
	}
	return out
}

// NodeLabelKeys are the node label keys DynamicResources may read when it weighs a pod's claims
// on a node: the instance type, by which a template node's view is named (ViewName), and the
// keys of the node selectors of the cluster's slices (devices reachable from several nodes) and
// of its allocated claims (which hold their pods to the nodes they select). The plugin reads the
// node's name besides, and nothing else of it.
func (m *Manager) NodeLabelKeys() []string {
	keys := sets.New(corev1.LabelInstanceTypeStable)
	add := func(ns *corev1.NodeSelector) {
		if ns == nil {
			return
		}
		for _, t := range ns.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				keys.Insert(e.Key)
			}
		}
	}
	if slices, err := m.base.ResourceSlices().ListWithDeviceTaintRules(); err == nil {
		for _, s := range slices {
			add(s.Spec.NodeSelector)
			for _, d := range s.Spec.Devices {
				add(d.NodeSelector)
			}
		}
	}
	if claims, err := m.base.ResourceClaims().List(); err == nil {
		for _, c := range claims {
			if c.Status.Allocation != nil {
				add(c.Status.Allocation.NodeSelector)
			}
		}
	}
	return sets.List(keys)
}
