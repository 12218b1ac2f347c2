package planner

import (
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Pool is a NodePool as the planner sees it: its instance types and what its NodeClaims already
// hold, counted against its limits.
type Pool struct {
	NodePool      *karpv1.NodePool
	InstanceTypes []*cloud.InstanceType
	// Used is the capacity of the pool's existing NodeClaims, plus "nodes" for their count.
	Used corev1.ResourceList
	// prepared is set by PreparePools.
	prepared *poolCatalog
}

// candidate is one thing the planner can launch: an instance type in one zone with one capacity
// type, from one NodePool, with the labels its node would register with.
type candidate struct {
	pool        *poolState
	it          *cloud.InstanceType
	offering    cloud.Offering
	labels      map[string]string
	allocatable corev1.ResourceList
	// typ indexes the pool's types; index is the candidate's place in the pool's compatible list.
	typ, index int
	// daemons are the DaemonSet pods that would run on a node of this offering; see daemonsOn.
	daemons      []*corev1.Pod
	daemonsKnown bool
}

// typeInfo is an instance type the pool may launch, with its allocatable in the form
// NodeResourcesFit reads it.
type typeInfo struct {
	it    *cloud.InstanceType
	alloc *framework.Resource
}

// poolState is a Pool during one plan.
type poolState struct {
	Pool
	reqs []corev1.NodeSelectorRequirement
	// compatible are the offerings that satisfy the pool's requirements, cheapest first.
	compatible []*candidate
	// open are the claims this plan has opened in the pool; their options count against limits.
	open []*openClaim
	// types are the instance types of compatible; bySize indexes them biggest first, by cpu then
	// memory, the order in which frontierOf looks for the types no other type dominates.
	types  []*typeInfo
	bySize []int
	// classes caches, per key signature, the class of every compatible offering.
	classes map[string][]int32
	// varying caches varyingKeys.
	varying []string
	// groups caches daemonGroups.
	groups []daemonGroup
	// free are the custom label keys whose value each claim settles (see customlabels.go).
	free []freeKey
	// efficient marks the compatible offerings a new claim tries first, and ratio is the memory
	// bytes per millicpu of the most efficient; see rateEfficiency.
	efficient []bool
	ratio     float64
	// rank is the pool's place in the plan's order of pools (by weight), and most the most cpu,
	// memory and pods any of its types holds (largest): both for growing claims (grow.go).
	rank int
	most *framework.Resource
}

// largest returns the most cpu, memory and pods any of the pool's types holds, each on its own.
func (ps *poolState) largest() *framework.Resource {
	if ps.most == nil {
		ps.most = &framework.Resource{}
		for _, t := range ps.types {
			ps.most.MilliCPU = max(ps.most.MilliCPU, t.alloc.MilliCPU)
			ps.most.Memory = max(ps.most.Memory, t.alloc.Memory)
			ps.most.AllowedPodNumber = max(ps.most.AllowedPodNumber, t.alloc.AllowedPodNumber)
		}
	}
	return ps.most
}

// ResourceNodes counts nodes in NodePool limits.
const ResourceNodes corev1.ResourceName = "nodes"

func newPoolState(p Pool) *poolState {
	if p.prepared != nil {
		return p.prepared.state(p)
	}
	ps := &poolState{Pool: p, reqs: poolRequirements(p.NodePool)}
	sel, err := scheduling.NewSelector(ps.reqs)
	if err != nil {
		// Admission validates requirements, so this is a pool the API server should have refused;
		// it offers nothing rather than everything.
		return ps
	}
	pinned, free, ok := customKeys(p.NodePool, ps.reqs, p.InstanceTypes)
	if !ok {
		// The requirements on a custom key allow no value: no node of the pool could carry one.
		return ps
	}
	ps.free = free
	reserved := namesCapacityType(ps.reqs)
	for _, it := range p.InstanceTypes {
		alloc := it.Allocatable()
		for _, o := range it.Offerings {
			if !o.Available || (o.CapacityType == karpv1.CapacityTypeReserved && !reserved) {
				continue
			}
			labels := candidateLabels(p.NodePool, pinned, it, o)
			if !sel.MatchesDefined(labels, isWellKnownLabel) {
				continue
			}
			ps.compatible = append(ps.compatible, &candidate{pool: ps, it: it, offering: o, labels: labels, allocatable: alloc})
		}
	}
	sort.SliceStable(ps.compatible, func(i, j int) bool {
		a, b := ps.compatible[i], ps.compatible[j]
		if a.offering.PricePerHour != b.offering.PricePerHour {
			return a.offering.PricePerHour < b.offering.PricePerHour
		}
		return a.it.Name < b.it.Name
	})
	byType := map[*cloud.InstanceType]int{}
	for i, c := range ps.compatible {
		c.index = i
		t, ok := byType[c.it]
		if !ok {
			t = len(ps.types)
			byType[c.it] = t
			ps.types = append(ps.types, &typeInfo{it: c.it, alloc: framework.NewResource(c.allocatable)})
		}
		c.typ = t
	}
	ps.bySize = make([]int, len(ps.types))
	for t := range ps.bySize {
		ps.bySize[t] = t
	}
	sort.SliceStable(ps.bySize, func(a, b int) bool {
		x, y := ps.types[ps.bySize[a]].alloc, ps.types[ps.bySize[b]].alloc
		if x.MilliCPU != y.MilliCPU {
			return x.MilliCPU > y.MilliCPU
		}
		return x.Memory > y.Memory
	})
	return ps
}

// classesFor returns the class of every compatible offering for pods that read keys: offerings in
// one class agree on every key, so the placement plugins cannot tell them apart.
func (ps *poolState) classesFor(keys podkeys.Keys) []int32 {
	sig := keys.Signature()
	if cl, ok := ps.classes[sig]; ok {
		return cl
	}
	out := make([]int32, len(ps.compatible))
	ids := map[string]int32{}
	for i, c := range ps.compatible {
		if keys.All {
			out[i] = int32(i)
			continue
		}
		k := podkeys.ClassKey(c.labels, keys.Selector, keys.Topology)
		id, ok := ids[k]
		if !ok {
			id = int32(len(ids))
			ids[k] = id
		}
		out[i] = id
	}
	if ps.classes == nil {
		ps.classes = map[string][]int32{}
	}
	ps.classes[sig] = out
	return out
}

// varyingKeys returns the label keys on which the pool's offerings differ, a key some of them
// lack included.
func (ps *poolState) varyingKeys() []string {
	if ps.varying != nil || len(ps.compatible) == 0 {
		return ps.varying
	}
	ps.varying = []string{}
	first := ps.compatible[0].labels
	seen := map[string]bool{}
	for _, c := range ps.compatible {
		for k, v := range c.labels {
			if w, ok := first[k]; !seen[k] && (!ok || w != v) {
				seen[k] = true
				ps.varying = append(ps.varying, k)
			}
		}
	}
	for k := range first {
		if !seen[k] {
			for _, c := range ps.compatible {
				if _, ok := c.labels[k]; !ok {
					ps.varying = append(ps.varying, k)
					break
				}
			}
		}
	}
	sort.Strings(ps.varying)
	return ps.varying
}

// domainsOf numbers the domains of the topology keys: offerings in one domain share a number.
func (ps *poolState) domainsOf(topology []string) []int32 {
	return ps.classesFor(podkeys.Keys{Topology: topology})
}

// dominates reports whether a has at least as much of every resource as b: a pod that passes
// NodeResourcesFit on b, with the same pods and requests, passes it on a too.
func dominates(a, b *framework.Resource) bool {
	if a.MilliCPU < b.MilliCPU || a.Memory < b.Memory || a.EphemeralStorage < b.EphemeralStorage ||
		a.AllowedPodNumber < b.AllowedPodNumber {
		return false
	}
	for name, q := range b.ScalarResources {
		if a.ScalarResources[name] < q {
			return false
		}
	}
	return true
}

// poolRequirements are the requirements every node of the pool meets: the template's, and its
// template labels, each as an In requirement on its one value, as Karpenter turns them into
// requirements. A template label on a well-known key (topology.kubernetes.io/zone, kubernetes.io/arch,
// an instance-type label) so narrows the offerings as a requirement would: a pool labelled with a
// zone launches there only. Admission refuses a label that its requirements on the same key do
// not allow; a pool stored before that rule offers nothing then, rather than nodes that break one
// or the other.
func poolRequirements(np *karpv1.NodePool) []corev1.NodeSelectorRequirement {
	reqs := scheduling.NodeSelectorRequirements(np.Spec.Template.Spec.Requirements)
	for _, k := range slices.Sorted(maps.Keys(np.Spec.Template.Labels)) {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{np.Spec.Template.Labels[k]}})
	}
	return reqs
}

// namesCapacityType says whether the requirements constrain karpenter.sh/capacity-type. As in
// Karpenter, only a NodePool that says which capacity types it takes launches into capacity
// reservations (its requirement must then admit "reserved"): a pool that says nothing would
// otherwise spend reservations bought for other workloads.
func namesCapacityType(reqs []corev1.NodeSelectorRequirement) bool {
	for _, r := range reqs {
		if r.Key == karpv1.CapacityTypeLabelKey {
			return true
		}
	}
	return false
}

func isWellKnownLabel(key string) bool {
	return karpv1.WellKnownLabels.Has(key) || awsv1.WellKnownLabels.Has(key)
}

// candidateLabels are the labels a node launched from this offering registers with: the
// NodePool's template labels, the instance type's, zone and capacity type, and the custom labels
// the pool's requirements pin to one value (pinned, from customKeys). Custom keys they leave open
// are the claim's to settle, and not among them.
func candidateLabels(pool *karpv1.NodePool, pinned map[string]string, it *cloud.InstanceType, o cloud.Offering) map[string]string {
	labels := make(map[string]string, len(it.Labels)+len(pool.Spec.Template.Labels)+len(pinned)+4)
	for k, v := range pool.Spec.Template.Labels {
		labels[k] = v
	}
	for k, v := range pinned {
		labels[k] = v
	}
	for k, v := range it.Labels {
		labels[k] = v
	}
	for k, v := range o.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = o.Zone
	labels[karpv1.CapacityTypeLabelKey] = o.CapacityType
	labels[karpv1.NodePoolLabelKey] = pool.Name
	return labels
}

// templateNode is the Node the candidate would register as, named name, with the custom labels a
// claim settled (see customlabels.go). Startup taints and karpenter.sh/unregistered are left
// out: they go away on their own, and pods need not tolerate them.
func (c *candidate) templateNode(name string, custom ...labelChoice) *corev1.Node {
	labels := make(map[string]string, len(c.labels)+1)
	for k, v := range c.labels {
		labels[k] = v
	}
	for _, choice := range custom {
		for _, kv := range choice {
			labels[kv.key] = kv.value
		}
	}
	labels[corev1.LabelHostname] = name
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: c.pool.NodePool.Spec.Template.Spec.Taints},
		Status:     corev1.NodeStatus{Capacity: c.it.Capacity, Allocatable: c.allocatable},
	}
}

// withinLimits reports whether launching it keeps the pool under its limits, and if not, which
// limit it would pass.
func (ps *poolState) withinLimits(it *cloud.InstanceType) (corev1.ResourceName, bool) {
	limits := corev1.ResourceList(ps.NodePool.Spec.Limits)
	if len(limits) == 0 {
		return "", true
	}
	used := scheduling.Add(ps.committed(), it.Capacity)
	used = scheduling.Add(used, corev1.ResourceList{ResourceNodes: *resource.NewQuantity(1, resource.DecimalSI)})
	if name, over := scheduling.Exceeds(used, limits); over {
		return name, false
	}
	return "", true
}

// committed is what counts against the pool's limits before another claim: its existing claims
// (Used) and the most that the claims opened by this plan may launch, with "nodes" counting both.
func (ps *poolState) committed() corev1.ResourceList {
	used := scheduling.Add(ps.Used, nil)
	for _, oc := range ps.open {
		used = scheduling.Add(used, oc.capacity)
	}
	if len(ps.open) > 0 {
		used = scheduling.Add(used, corev1.ResourceList{ResourceNodes: *resource.NewQuantity(int64(len(ps.open)), resource.DecimalSI)})
	}
	return used
}

// SortPools orders pools as the planner wants them: highest weight first (no weight is 0), then
// by name so that plans are deterministic.
func SortPools(pools []Pool) {
	sort.SliceStable(pools, func(i, j int) bool {
		wi, wj := weight(pools[i].NodePool), weight(pools[j].NodePool)
		if wi != wj {
			return wi > wj
		}
		return pools[i].NodePool.Name < pools[j].NodePool.Name
	})
}

func weight(np *karpv1.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}
