package provision

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Pool is a NodePool as the planner sees it: its instance types and what its NodeClaims already
// hold, counted against its limits.
type Pool struct {
	NodePool      *karpv1.NodePool
	InstanceTypes []*cloud.InstanceType
	// Used is the capacity of the pool's existing NodeClaims, plus "nodes" for their count.
	Used corev1.ResourceList
}

// candidate is one thing the planner can launch: an instance type in one zone with one capacity
// type, from one NodePool, with the labels its node would register with.
type candidate struct {
	pool        *poolState
	it          *cloud.InstanceType
	offering    cloud.Offering
	labels      map[string]string
	allocatable corev1.ResourceList
	// daemons are the DaemonSet pods that would run on a node of this offering; see daemonsOn.
	daemons      []*corev1.Pod
	daemonsKnown bool
}

// poolState is a Pool during one plan.
type poolState struct {
	Pool
	reqs []corev1.NodeSelectorRequirement
	// compatible are the offerings that satisfy the pool's requirements, cheapest first.
	compatible []*candidate
	// open are the claims this plan has opened in the pool; their options count against limits.
	open []*openClaim
}

// ResourceNodes counts nodes in NodePool limits.
const ResourceNodes corev1.ResourceName = "nodes"

func newPoolState(p Pool) *poolState {
	ps := &poolState{Pool: p, reqs: scheduling.NodeSelectorRequirements(p.NodePool.Spec.Template.Spec.Requirements)}
	sel, err := scheduling.NewSelector(ps.reqs)
	if err != nil {
		// Admission validates requirements, so this is a pool the API server should have refused;
		// it offers nothing rather than everything.
		return ps
	}
	for _, it := range p.InstanceTypes {
		alloc := it.Allocatable()
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			labels := candidateLabels(p.NodePool, it, o, ps.reqs)
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
	return ps
}

func isWellKnownLabel(key string) bool {
	return karpv1.WellKnownLabels.Has(key) || awsv1.WellKnownLabels.Has(key)
}

// candidateLabels are the labels a node launched from this offering registers with: the
// NodePool's template labels, the instance type's, zone and capacity type, and custom labels the
// pool's requirements pin to a value.
func candidateLabels(pool *karpv1.NodePool, it *cloud.InstanceType, o cloud.Offering, reqs []corev1.NodeSelectorRequirement) map[string]string {
	labels := make(map[string]string, len(it.Labels)+len(pool.Spec.Template.Labels)+4)
	for k, v := range pool.Spec.Template.Labels {
		labels[k] = v
	}
	for _, r := range reqs {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) > 0 && !isWellKnownLabel(r.Key) {
			if _, set := labels[r.Key]; !set {
				labels[r.Key] = r.Values[0]
			}
		}
	}
	for k, v := range it.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = o.Zone
	labels[karpv1.CapacityTypeLabelKey] = o.CapacityType
	labels[karpv1.NodePoolLabelKey] = pool.Name
	return labels
}

// templateNode is the Node the candidate would register as, named name. Startup taints and
// karpenter.sh/unregistered are left out: they go away on their own, and pods need not
// tolerate them.
func (c *candidate) templateNode(name string) *corev1.Node {
	labels := make(map[string]string, len(c.labels)+1)
	for k, v := range c.labels {
		labels[k] = v
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
		used = scheduling.Add(used, oc.maxCapacity())
	}
	if len(ps.open) > 0 {
		used = scheduling.Add(used, corev1.ResourceList{ResourceNodes: *resource.NewQuantity(int64(len(ps.open)), resource.DecimalSI)})
	}
	return used
}
