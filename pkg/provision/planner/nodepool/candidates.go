package nodepool

import (
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
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
	// deviceBacked are extended resources its nodes will not advertise, as DRA devices back them
	// (WithoutBacked).
	deviceBacked map[corev1.ResourceName]bool
}

// Candidate is one thing the planner can launch: an instance type in one zone with one capacity
// type, from one NodePool, with the labels its node would register with. A candidate is read-only
// once its pool's state is built: a prepared pool's candidates are shared by every plan made with
// it, so Pool is the state they were worked out in, whose catalog (NodePool, Types, Free) is the
// plan's but whose plan-time fields (OpenCapacity, Efficient, ...) are not; a plan reads those on
// its own State.
type Candidate struct {
	Pool        *State
	It          *cloud.InstanceType
	Offering    cloud.Offering
	Labels      map[string]string
	Allocatable corev1.ResourceList
	// Typ indexes the pool's types; index is the candidate's place in the pool's compatible list.
	Typ, Index int
}

// typeInfo is an instance type the pool may launch, with its allocatable in the form
// NodeResourcesFit reads it.
type typeInfo struct {
	It    *cloud.InstanceType
	Alloc *framework.Resource
	// cpu and memory are the type's allocatable cpu (cores) and memory as approximate floats,
	// read once: RateEfficiency reads them for every offering of every plan.
	cpu, memory float64
}

// State is a Pool during one plan.
type State struct {
	Pool
	reqs []corev1.NodeSelectorRequirement
	// Compatible are the offerings that satisfy the pool's requirements, cheapest first.
	Compatible []*Candidate
	// OpenCapacity are the capacities of the claims this plan has opened in the pool, each as it
	// narrows: the most their options may launch counts against limits.
	OpenCapacity []*corev1.ResourceList
	// Types are the instance types of compatible; bySize indexes them biggest first, by cpu then
	// memory, the order in which frontierOf looks for the types no other type dominates.
	Types  []*typeInfo
	bySize []int
	// classes caches, per key signature, the class of every compatible offering.
	classes map[string][]int32
	// varying caches varyingKeys.
	varying []string
	// Groups caches daemonGroups.
	Groups []DaemonGroup
	// domainFirsts caches DomainFirsts, every Every, byTypeName ByTypeName.
	domainFirsts, every []int
	byTypeName          map[string][]int
	// Free are the custom label keys whose value each claim settles (see customlabels.go).
	Free []freeKey
	// Efficient marks the compatible offerings a new claim tries first, and ratio is the memory
	// bytes per millicpu of the most efficient; see RateEfficiency.
	Efficient []bool
	Ratio     float64
	// Rank is the pool's place in the plan's order of pools (by weight), and most the most cpu,
	// memory and pods any of its types holds (largest): both for growing claims (grow.go).
	Rank int
	most *framework.Resource
}

// Largest returns the most cpu, memory and pods any of the pool's types holds, each on its own.
func (ps *State) Largest() *framework.Resource {
	if ps.most == nil {
		ps.most = &framework.Resource{}
		for _, t := range ps.Types {
			ps.most.MilliCPU = max(ps.most.MilliCPU, t.Alloc.MilliCPU)
			ps.most.Memory = max(ps.most.Memory, t.Alloc.Memory)
			ps.most.AllowedPodNumber = max(ps.most.AllowedPodNumber, t.Alloc.AllowedPodNumber)
		}
	}
	return ps.most
}

// ResourceNodes counts nodes in NodePool limits.
const ResourceNodes corev1.ResourceName = "nodes"

func NewState(p Pool) *State {
	if p.prepared != nil {
		return p.prepared.state(p)
	}
	ps := &State{Pool: p, reqs: poolRequirements(p.NodePool)}
	sel, err := scheduling.NewSelector(ps.reqs)
	if err != nil {
		// Admission validates requirements, so this is a pool the API server should have refused;
		// it offers nothing rather than everything.
		return ps
	}
	pinned, free, ok := CustomKeys(p.NodePool, ps.reqs, p.InstanceTypes)
	if !ok {
		// The requirements on a custom key allow no value: no node of the pool could carry one.
		return ps
	}
	ps.Free = free
	reserved := namesCapacityType(ps.reqs)
	for _, it := range p.InstanceTypes {
		alloc := allocatableOf(p, it.Allocatable())
		for _, o := range it.Offerings {
			if !o.Available || (o.CapacityType == karpv1.CapacityTypeReserved && !reserved) {
				continue
			}
			labels := candidateLabels(p.NodePool, pinned, it, o)
			if !sel.MatchesDefined(labels, isWellKnownLabel) {
				continue
			}
			ps.Compatible = append(ps.Compatible, &Candidate{Pool: ps, It: it, Offering: o, Labels: labels, Allocatable: alloc})
		}
	}
	sort.SliceStable(ps.Compatible, func(i, j int) bool {
		a, b := ps.Compatible[i], ps.Compatible[j]
		if a.Offering.PricePerHour != b.Offering.PricePerHour {
			return a.Offering.PricePerHour < b.Offering.PricePerHour
		}
		return a.It.Name < b.It.Name
	})
	byType := map[*cloud.InstanceType]int{}
	for i, c := range ps.Compatible {
		c.Index = i
		t, ok := byType[c.It]
		if !ok {
			t = len(ps.Types)
			byType[c.It] = t
			ps.Types = append(ps.Types, &typeInfo{It: c.It, Alloc: framework.NewResource(c.Allocatable),
				cpu: c.Allocatable.Cpu().AsApproximateFloat64(), memory: c.Allocatable.Memory().AsApproximateFloat64()})
		}
		c.Typ = t
	}
	ps.bySize = make([]int, len(ps.Types))
	for t := range ps.bySize {
		ps.bySize[t] = t
	}
	sort.SliceStable(ps.bySize, func(a, b int) bool {
		x, y := ps.Types[ps.bySize[a]].Alloc, ps.Types[ps.bySize[b]].Alloc
		if x.MilliCPU != y.MilliCPU {
			return x.MilliCPU > y.MilliCPU
		}
		return x.Memory > y.Memory
	})
	return ps
}

// Every returns the places of all the compatible offerings, in order: a list shared read-only by
// the plans of a prepared pool, which neither write into it nor append to it in place (its
// capacity is its length).
func (ps *State) Every() []int {
	if ps.every == nil {
		ps.every = make([]int, len(ps.Compatible))
		for i := range ps.every {
			ps.every[i] = i
		}
	}
	return ps.every
}

// ClassesFor returns the class of every compatible offering for pods that read keys: offerings in
// one class agree on every key, so the placement plugins cannot tell them apart.
func (ps *State) ClassesFor(keys podkeys.Keys) []int32 {
	if pc := ps.prepared; pc != nil {
		// Every plan of the pass asks the catalog's cache, under its lock.
		pc.mu.Lock()
		defer pc.mu.Unlock()
		return cachedClasses(&pc.classes, ps.Compatible, keys)
	}
	return cachedClasses(&ps.classes, ps.Compatible, keys)
}

// cachedClasses is classesOf, kept in *cache by the keys' signature.
func cachedClasses(cache *map[string][]int32, compatible []*Candidate, keys podkeys.Keys) []int32 {
	sig := keys.Signature()
	if cl, ok := (*cache)[sig]; ok {
		return cl
	}
	cl := classesOf(compatible, keys)
	if *cache == nil {
		*cache = map[string][]int32{}
	}
	(*cache)[sig] = cl
	return cl
}

// classesOf numbers the offerings by what their labels say for keys, in order of first
// appearance.
func classesOf(compatible []*Candidate, keys podkeys.Keys) []int32 {
	out := make([]int32, len(compatible))
	ids := map[string]int32{}
	for i, c := range compatible {
		if keys.All {
			out[i] = int32(i)
			continue
		}
		k := podkeys.ClassKey(c.Labels, keys.Selector, keys.Topology)
		id, ok := ids[k]
		if !ok {
			id = int32(len(ids))
			ids[k] = id
		}
		out[i] = id
	}
	return out
}

// VaryingKeys returns the label keys on which the pool's offerings differ, a key some of them
// lack included.
func (ps *State) VaryingKeys() []string {
	if ps.varying != nil || len(ps.Compatible) == 0 {
		return ps.varying
	}
	ps.varying = []string{}
	first := ps.Compatible[0].Labels
	seen := map[string]bool{}
	for _, c := range ps.Compatible {
		for k, v := range c.Labels {
			if w, ok := first[k]; !seen[k] && (!ok || w != v) {
				seen[k] = true
				ps.varying = append(ps.varying, k)
			}
		}
	}
	for k := range first {
		if !seen[k] {
			for _, c := range ps.Compatible {
				if _, ok := c.Labels[k]; !ok {
					ps.varying = append(ps.varying, k)
					break
				}
			}
		}
	}
	sort.Strings(ps.varying)
	return ps.varying
}

// DomainsOf numbers the domains of the topology keys: offerings in one domain share a number.
func (ps *State) DomainsOf(topology []string) []int32 {
	return ps.ClassesFor(podkeys.Keys{Topology: topology})
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
// the pool's requirements pin to one value (pinned, from CustomKeys). Custom keys they leave open
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

// TemplateNode is the Node the candidate would register as, named name, with the custom labels a
// claim settled (see customlabels.go). Startup taints and karpenter.sh/unregistered are left
// out: they go away on their own, and pods need not tolerate them.
func (c *Candidate) TemplateNode(name string, custom ...LabelChoice) *corev1.Node {
	labels := make(map[string]string, len(c.Labels)+1)
	for k, v := range c.Labels {
		labels[k] = v
	}
	for _, choice := range custom {
		for _, kv := range choice {
			labels[kv.Key] = kv.Value
		}
	}
	labels[corev1.LabelHostname] = name
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: c.Pool.NodePool.Spec.Template.Spec.Taints},
		Status:     corev1.NodeStatus{Capacity: c.It.Capacity, Allocatable: c.Allocatable},
	}
}
