package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// State is the cluster one disruption pass decides from: what the informers show, plus the part
// of the scheduler's view they do not show yet (pods assumed onto nodes, pods planned onto
// capacity in flight). Methods and simulations are functions of it.
type State struct {
	// Unavailable maps NodePools that cannot launch now (their node class is not ready) to why:
	// their nodes are not disrupted, since nothing could replace them, and the other pools'
	// are, as if those pools were not there.
	Unavailable map[string]string
	Nodes       []*corev1.Node
	Pods        []*corev1.Pod
	Claims      []*karpv1.NodeClaim
	// Pools are the NodePools by name; TypesByPool their instance types.
	Pools       map[string]*karpv1.NodePool
	TypesByPool map[string][]*cloud.InstanceType
	PDBs        []*policyv1.PodDisruptionBudget
	// DaemonSets are the pods DaemonSets would run on a new node.
	DaemonSets []*corev1.Pod
	// Planned and Assumed are the provisioner's ledger (see planner.Cluster).
	Planned, Assumed map[types.UID]string
	// Awaited are NodeClaims that pods planned onto them are still on their way to: such a node
	// looks empty, or emptier than it will be.
	Awaited map[string]bool
	// AwaitedNodes are nodes a plan left pending pods to: they fit there and are about to bind.
	AwaitedNodes map[string]bool
	// Gangs are the PodGroups ("namespace/name") whose gang policy binds their pods all together
	// or not at all. Their nodes are not disrupted voluntarily: a node drained alone would leave
	// the gang short, and its pods would wait for a place that the scheduler only gives a whole
	// gang.
	Gangs map[string]bool
	Now   time.Time

	// byProvider indexes Claims by provider ID; see claimOf.
	byProvider map[string]*karpv1.NodeClaim
	// prepared, when set, keeps the pools' offerings from one State to the next (the
	// controller's); without it each State works them out for itself.
	prepared *planner.PoolCache
}

// claimOf returns the NodeClaim whose instance the node is, matched by provider ID; a node
// without one (not launched by Tailor) has none.
func (s *State) claimOf(n *corev1.Node) (*karpv1.NodeClaim, bool) {
	if n.Spec.ProviderID == "" {
		return nil, false
	}
	if s.byProvider == nil {
		s.byProvider = make(map[string]*karpv1.NodeClaim, len(s.Claims))
		for _, c := range s.Claims {
			if c.Status.ProviderID != "" {
				s.byProvider[c.Status.ProviderID] = c
			}
		}
	}
	claim, ok := s.byProvider[n.Spec.ProviderID]
	return claim, ok
}

// cluster is the state as the provisioner's planner reads it.
func (s *State) cluster() *planner.Cluster {
	return &planner.Cluster{Nodes: s.Nodes, Pods: s.Pods, Claims: s.Claims, Planned: s.Planned, Assumed: s.Assumed}
}

// pools returns the NodePools the planner may launch replacements from, in its order, with what
// each already uses counted against its limits.
func (s *State) pools() []planner.Pool {
	usage := planner.PoolUsage(s.Claims, s.TypesByPool)
	var out []planner.Pool
	for name, np := range s.Pools {
		if np.DeletionTimestamp != nil {
			continue
		}
		out = append(out, planner.Pool{NodePool: np, InstanceTypes: s.TypesByPool[name], Used: usage[name]})
	}
	planner.SortPools(out)
	return out
}

// preparedPools are pools with their offerings worked out (planner.PreparePools), from the
// controller's cache when the State has one.
func (s *State) preparedPools() []planner.Pool {
	if s.prepared != nil {
		return s.prepared.Prepare(s.pools())
	}
	return planner.PreparePools(s.pools())
}

// podsByNode returns the pods that will run on each node: bound there, or assumed there by the
// scheduler and not yet bound. With only set, it keeps the nodes of only alone: a pass runs every
// few seconds, and the nodes Tailor does not manage (every node, where Tailor launched none) hold
// pods that no candidate needs, a map entry and a slice each.
func (s *State) podsByNode(only map[string]bool) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	if only != nil && len(only) == 0 {
		return out
	}
	for _, p := range s.Pods {
		n := p.Spec.NodeName
		if n == "" {
			n = s.Assumed[p.UID]
		}
		if n == "" || (only != nil && !only[n]) {
			continue
		}
		if p.Spec.NodeName == "" {
			p = p.DeepCopy()
			p.Spec.NodeName = n
		}
		out[n] = append(out[n], p)
	}
	return out
}

// nominated returns the nodes that unbound pods are nominated to: the scheduler keeps room there
// for them (after a preemption, or for capacity Tailor launched), so the node must stay.
func (s *State) nominated() map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Pods {
		if p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" && p.DeletionTimestamp == nil {
			out[p.Status.NominatedNodeName] = true
		}
	}
	return out
}

// price returns the hourly price of the offering a node runs as, and false when the catalog no
// longer lists it.
func (s *State) price(pool string, node *corev1.Node) (*cloud.InstanceType, float64, bool) {
	name := node.Labels[corev1.LabelInstanceTypeStable]
	zone := node.Labels[corev1.LabelTopologyZone]
	ct := node.Labels[karpv1.CapacityTypeLabelKey]
	for _, it := range s.TypesByPool[pool] {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return it, o.PricePerHour, true
			}
		}
		return it, 0, false
	}
	return nil, 0, false
}
