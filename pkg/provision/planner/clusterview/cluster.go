package clusterview

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Cluster is the state one plan starts from, read from informers and the provisioner's memory.
type Cluster struct {
	Nodes  []*corev1.Node
	Pods   []*corev1.Pod
	Claims []*karpv1.NodeClaim
	// Planned maps pods to the NodeClaim an earlier plan put them on.
	Planned map[types.UID]string
	// Assumed maps pods the scheduler has reserved onto a node, but not yet bound, to that node.
	Assumed map[types.UID]string
	// Toward maps pending pods an earlier plan left to a node that exists, or whose claim has
	// initialized, to that node, while the scheduler has not refused them since: they are
	// counted there, as the scheduler will place them, instead of planned again every round.
	Toward map[types.UID]string
}

// View is what the planner sees of the cluster.
type View struct {
	// Nodes are the nodes pods may go to: ready nodes, nodes still starting (shown without their
	// ephemeral and startup taints), and a stand-in for every NodeClaim whose Node has not
	// registered yet. Nodes being deleted or disrupted are left out.
	Nodes []*corev1.Node
	// Pods are the pods on those nodes: bound, assumed by the scheduler, or planned or nominated
	// onto capacity in flight.
	Pods []*corev1.Pod
	// InFlight maps the names of nodes that are launching or starting to their NodeClaims.
	InFlight map[string]string
	// Counted are the unbound pods already counted on a node: they need no plan.
	Counted map[types.UID]bool
	// Headed are the unbound pods of Counted that an earlier plan or a nomination sent to a node,
	// rather than the scheduler's own assumption, with that node (see Ungrounded).
	Headed map[types.UID]string
	// Unsettled maps the stand-ins of claims that may still launch with several values of a
	// label (several zones, say) to those label keys (see unsettledKeys).
	Unsettled map[string][]string
	// Reschedulable are pods on nodes being deleted or disrupted that will be evicted: capacity
	// for them is planned before they go, together, rather than one replacement at a time.
	Reschedulable []*corev1.Pod
}

// ephemeralTaints go away by themselves while a node starts; a node that still has them counts as
// capacity in flight, not as a node that refuses pods.
var ephemeralTaints = []string{
	karpv1.UnregisteredTaintKey,
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
}

// View builds the planner's view of the cluster.
func (c *Cluster) View(typesByPool map[string][]*cloud.InstanceType) *View {
	v := &View{InFlight: map[string]string{}, Counted: map[types.UID]bool{}, Headed: map[types.UID]string{}, Unsettled: map[string][]string{}}
	byProviderID := make(map[string]*karpv1.NodeClaim, len(c.Claims))
	claimNode := map[string]string{}
	for _, claim := range c.Claims {
		if claim.Status.ProviderID != "" {
			byProviderID[claim.Status.ProviderID] = claim
		}
	}
	leaving := map[string]bool{}
	for _, n := range c.Nodes {
		claim, ok := byProviderID[n.Spec.ProviderID]
		switch {
		case scheduling.IsLeaving(n, claim):
			leaving[n.Name] = true
		case ok && claim.IsTrue(karpv1.ConditionTypeInitialized) && scheduling.HasTaintKey(n, karpv1.UnregisteredTaintKey):
			// Registration lifts the taint in the Node patch it sends just before it writes the
			// claim, but the two come through different informers: the claim can be read
			// initialized beside the Node as it joined. Read as it is listed, the node takes no
			// pod, and the pods of the node it replaces were planned a node of their own (an
			// extra node in a CI run of TestCapacityReservations).
			v.Nodes = append(v.Nodes, asItsClaimSays(n, claim))
		case !ok || claim.IsTrue(karpv1.ConditionTypeInitialized):
			v.Nodes = append(v.Nodes, n)
		default:
			v.Nodes = append(v.Nodes, asItsClaimSays(n, claim))
			v.InFlight[n.Name] = claim.Name
		}
		if ok {
			claimNode[claim.Name] = n.Name
		}
	}
	for _, claim := range c.Claims {
		if claim.DeletionTimestamp != nil {
			continue
		}
		if _, registered := claimNode[claim.Name]; registered {
			continue
		}
		n := StandIn(claim, typesByPool[claim.Labels[karpv1.NodePoolLabelKey]])
		v.Nodes = append(v.Nodes, n)
		v.InFlight[n.Name] = claim.Name
		if keys := unsettledKeys(claim, n); len(keys) > 0 {
			v.Unsettled[n.Name] = keys
		}
		claimNode[claim.Name] = n.Name
	}
	v.placePods(c, claimNode, leaving)
	return v
}

// placePods puts the cluster's pods in the view: bound pods on their nodes, pods of leaving
// nodes on the capacity planned for them or among the reschedulable, and unbound pods on the
// node they are assumed, planned or nominated onto.
func (v *View) placePods(c *Cluster, claimNode map[string]string, leaving map[string]bool) {
	present := make(map[string]bool, len(v.Nodes))
	for _, n := range v.Nodes {
		present[n.Name] = true
	}
	// countOn puts an unbound pod on a node in the view, if the node is there.
	countOn := func(p *corev1.Pod, node string) bool {
		if !present[node] {
			return false
		}
		v.Pods = append(v.Pods, OnNode(p, node))
		v.Counted[p.UID] = true
		return true
	}
	for _, p := range c.Pods {
		switch {
		case p.Spec.NodeName != "":
			switch {
			case present[p.Spec.NodeName]:
				v.Pods = append(v.Pods, p)
				if claim := c.Planned[p.UID]; claim != "" && present[claimNode[claim]] && claimNode[claim] != p.Spec.NodeName {
					// Adopted by a replacement while its node is not yet tainted: its room there
					// is taken too, or the replacement would look empty to the next plan.
					v.Pods = append(v.Pods, OnNode(p, claimNode[claim]))
				}
			case !leaving[p.Spec.NodeName] || !scheduling.NeedsEviction(p) || scheduling.IsDaemonSetPod(p):
			case c.Planned[p.UID] != "" && countOn(p, claimNode[c.Planned[p.UID]]):
			default:
				// Planned as the pod it will be once evicted: unbound (its replacement is a new pod
				// of the same shape, which then finds this capacity in flight).
				v.Reschedulable = append(v.Reschedulable, scheduling.Unbound(p))
			}
		case c.Assumed[p.UID] != "" && countOn(p, c.Assumed[p.UID]):
		case c.Planned[p.UID] != "" && countOn(p, claimNode[c.Planned[p.UID]]):
			v.Headed[p.UID] = claimNode[c.Planned[p.UID]]
		case c.Toward[p.UID] != "" && countOn(p, c.Toward[p.UID]):
			v.Headed[p.UID] = c.Toward[p.UID]
		case p.Status.NominatedNodeName != "" && v.InFlight[p.Status.NominatedNodeName] != "":
			if countOn(p, p.Status.NominatedNodeName) {
				v.Headed[p.UID] = p.Status.NominatedNodeName
			}
		}
	}
}

// asItsClaimSays is a node that joined for a claim not yet initialized, as it will be once
// registration has synced the claim onto it: with the claim's labels and taints, and without the
// taints that go away while it starts. A Node may join with fewer labels than its claim holds (the
// capacity type, custom labels of the NodePool); weighed as it joined, it would count the pods
// planned onto it in no domain of those keys, and the next plan would put siblings into a domain
// the scheduler then finds full (three replicas planned onto spot where a capacity-type spread
// allowed two).
func asItsClaimSays(n *corev1.Node, claim *karpv1.NodeClaim) *corev1.Node {
	out := n.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range claimLabels(claim) {
		if k != corev1.LabelHostname {
			out.Labels[k] = v
		}
	}
	out.Spec.Taints = slices.DeleteFunc(out.Spec.Taints, func(t corev1.Taint) bool {
		if slices.Contains(ephemeralTaints, t.Key) {
			return true
		}
		return slices.ContainsFunc(claim.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) })
	})
	out.Spec.Taints = scheduling.WithTaints(out.Spec.Taints, claim.Spec.Taints)
	return out
}

// claimLabels are the labels a claim's node will have as far as the claim says: those of its
// requirements that allow one value, and its own labels, which the cloud's launch fills in.
func claimLabels(claim *karpv1.NodeClaim) map[string]string {
	labels := map[string]string{}
	for _, r := range scheduling.NodeSelectorRequirements(claim.Spec.Requirements) {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	for k, v := range claim.Labels {
		labels[k] = v
	}
	return labels
}

// StandIn is the node a launching NodeClaim will become, as far as is known: its labels, its
// taints, and the smallest allocatable among the instance types it may still launch as, so that
// pods are never counted onto room it might not have.
func StandIn(claim *karpv1.NodeClaim, its []*cloud.InstanceType) *corev1.Node {
	allowed := allowedTypes(scheduling.NodeSelectorRequirements(claim.Spec.Requirements), its)
	labels := claimLabels(claim)
	for k, v := range sharedLabels(allowed) {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	name := claim.Status.NodeName
	if name == "" {
		name = claim.Name
	}
	labels[corev1.LabelHostname] = name
	allocatable, capacity := claim.Status.Allocatable, claim.Status.Capacity
	if len(allocatable) == 0 {
		allocatable, capacity = smallestOption(claim, allowed)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: claim.Spec.Taints, ProviderID: claim.Status.ProviderID},
		Status:     corev1.NodeStatus{Allocatable: allocatable, Capacity: capacity},
	}
}

// allowedTypes are the instance types of its that the claim's requirements name.
func allowedTypes(reqs []corev1.NodeSelectorRequirement, its []*cloud.InstanceType) []*cloud.InstanceType {
	var names []string
	for _, r := range reqs {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
			names = r.Values
		}
	}
	var out []*cloud.InstanceType
	for _, it := range its {
		if slices.Contains(names, it.Name) {
			out = append(out, it)
		}
	}
	return out
}

// sharedLabels are the labels every one of types carries (the architecture, when they are all
// Graviton types): the node carries them whichever of the types launches. A claim's requirements
// name its types but not what they share, and a stand-in without kubernetes.io/arch does not
// match a pod that selects arm64; PodTopologySpread then leaves the stand-in out of that pod's
// domains, and a plan counted none of the replicas already planned onto the claim. Harness seed
// 1728: three plans in a row each put two replicas of a zone spread that allows two into one zone.
func sharedLabels(types []*cloud.InstanceType) map[string]string {
	if len(types) == 0 {
		return nil
	}
	out := maps.Clone(types[0].Labels)
	for _, it := range types[1:] {
		for k, v := range out {
			if it.Labels[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// smallestOption is the allocatable and capacity a launching claim is sure to have, whichever of
// allowed it launches as: the least of each resource. It was the type with the fewest cpus, but
// types of the same cpus differ in memory (c7g.4xlarge has half of m7g.4xlarge's): a burst's
// claim that stood in as the larger took pods that its launch, as the cheaper, had no memory for,
// and the last of them had a node launched for it alone 1.7 s after the burst's last pod.
func smallestOption(claim *karpv1.NodeClaim, allowed []*cloud.InstanceType) (corev1.ResourceList, corev1.ResourceList) {
	if len(allowed) == 0 {
		// Nothing is known about its size: count only what was planned onto it.
		return claim.Spec.Resources.Requests, claim.Spec.Resources.Requests
	}
	allocatable, capacity := allowed[0].Allocatable(), allowed[0].Capacity.DeepCopy()
	for _, it := range allowed[1:] {
		least(allocatable, it.Allocatable())
		least(capacity, it.Capacity)
	}
	return allocatable, capacity
}

// least lowers each resource of into to what of has, and drops those of lacks.
func least(into, of corev1.ResourceList) {
	for name, q := range into {
		has, ok := of[name]
		switch {
		case !ok:
			delete(into, name)
		case has.Cmp(q) < 0:
			into[name] = has.DeepCopy()
		}
	}
}

// OnNode is pod as if bound to node: a copy of the Pod struct sharing its maps, slices and
// pointers with pod, which no reader of a plan's pods writes to (the scheduler's plugins read pods
// as they read the informer's). Each round counts every pod on its way this way, and a deep copy
// of each was 91 of the 2,878 CPU-s of a 20,000-pod scale-up.
func OnNode(p *corev1.Pod, node string) *corev1.Pod {
	out := *p
	out.Spec.NodeName = node
	return &out
}

// PoolUsage adds up, per NodePool, the capacity its live NodeClaims hold (the largest instance
// type a claim may launch as, until it has launched) and their count. The sums are kept in place:
// every round adds up every claim, and a new list per claim was 55 CPU-s of a 20,000-pod
// scale-up on 5,000 claims.
func PoolUsage(claims []*karpv1.NodeClaim, typesByPool map[string][]*cloud.InstanceType) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	oneNode := corev1.ResourceList{nodepool.ResourceNodes: *resource.NewQuantity(1, resource.DecimalSI)}
	for _, claim := range claims {
		pool := claim.Labels[karpv1.NodePoolLabelKey]
		if pool == "" || claim.DeletionTimestamp != nil {
			continue
		}
		capacity := claim.Status.Capacity
		if len(capacity) == 0 {
			capacity = largestOption(claim, typesByPool[pool])
		}
		used := out[pool]
		if used == nil {
			used = corev1.ResourceList{}
			out[pool] = used
		}
		scheduling.AddTo(used, capacity)
		scheduling.AddTo(used, oneNode)
	}
	return out
}

func largestOption(claim *karpv1.NodeClaim, its []*cloud.InstanceType) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, r := range claim.Spec.Requirements {
		if r.Key != corev1.LabelInstanceTypeStable || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		for _, it := range its {
			if !slices.Contains(r.Values, it.Name) {
				continue
			}
			for name, q := range it.Capacity {
				if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
					out[name] = q
				}
			}
		}
	}
	return out
}
