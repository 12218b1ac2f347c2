package provision

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Cluster is the state one plan starts from, read from informers.
type Cluster struct {
	Nodes  []*corev1.Node
	Pods   []*corev1.Pod
	Claims []*karpv1.NodeClaim
	// Planned maps pods to the NodeClaim an earlier plan put them on.
	Planned map[types.UID]string
}

// ephemeralTaints go away by themselves while a node starts; a node that still has them counts as
// capacity in flight, not as a node that refuses pods.
var ephemeralTaints = []string{
	karpv1.UnregisteredTaintKey,
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
}

// InFlightView returns the nodes and pods the planner should see: every node, with nodes that
// are still starting shown without their ephemeral and startup taints; a stand-in node for every
// NodeClaim whose Node has not registered yet; and bound pods plus pods planned or nominated onto
// in-flight capacity. inFlight maps those node names to their NodeClaim, and planned lists the
// pods already counted on them.
func (c *Cluster) InFlightView(typesByPool map[string][]*cloud.InstanceType) (nodes []*corev1.Node, pods []*corev1.Pod, inFlight map[string]string, planned map[types.UID]bool) {
	inFlight = map[string]string{}
	planned = map[types.UID]bool{}
	byProviderID := make(map[string]*karpv1.NodeClaim, len(c.Claims))
	claimNode := map[string]string{}
	for _, claim := range c.Claims {
		if claim.Status.ProviderID != "" {
			byProviderID[claim.Status.ProviderID] = claim
		}
	}
	for _, n := range c.Nodes {
		claim, ok := byProviderID[n.Spec.ProviderID]
		if !ok || claim.IsTrue(karpv1.ConditionTypeInitialized) {
			nodes = append(nodes, n)
			if ok {
				claimNode[claim.Name] = n.Name
			}
			continue
		}
		if claim.DeletionTimestamp != nil {
			continue
		}
		nodes = append(nodes, withoutStartupTaints(n, claim))
		inFlight[n.Name] = claim.Name
		claimNode[claim.Name] = n.Name
	}
	for _, claim := range c.Claims {
		if claim.DeletionTimestamp != nil {
			continue
		}
		if _, registered := claimNode[claim.Name]; registered {
			continue
		}
		n := standIn(claim, typesByPool[claim.Labels[karpv1.NodePoolLabelKey]])
		nodes = append(nodes, n)
		inFlight[n.Name] = claim.Name
		claimNode[claim.Name] = n.Name
	}
	for _, p := range c.Pods {
		switch {
		case p.Spec.NodeName != "":
			pods = append(pods, p)
		case c.Planned[p.UID] != "" && claimNode[c.Planned[p.UID]] != "":
			pods = append(pods, onNode(p, claimNode[c.Planned[p.UID]]))
			planned[p.UID] = true
		case p.Status.NominatedNodeName != "" && inFlight[p.Status.NominatedNodeName] != "":
			pods = append(pods, onNode(p, p.Status.NominatedNodeName))
			planned[p.UID] = true
		}
	}
	return nodes, pods, inFlight, planned
}

func withoutStartupTaints(n *corev1.Node, claim *karpv1.NodeClaim) *corev1.Node {
	out := n.DeepCopy()
	out.Spec.Taints = slices.DeleteFunc(out.Spec.Taints, func(t corev1.Taint) bool {
		if slices.Contains(ephemeralTaints, t.Key) {
			return true
		}
		return slices.ContainsFunc(claim.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) })
	})
	return out
}

// standIn is the node a launching NodeClaim will become, as far as is known: its labels, its
// taints, and the smallest allocatable among the instance types it may still launch as, so that
// pods are never counted onto room it might not have.
func standIn(claim *karpv1.NodeClaim, its []*cloud.InstanceType) *corev1.Node {
	reqs := scheduling.NodeSelectorRequirements(claim.Spec.Requirements)
	labels := map[string]string{}
	for _, r := range reqs {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	for k, v := range claim.Labels {
		labels[k] = v
	}
	name := claim.Status.NodeName
	if name == "" {
		name = claim.Name
	}
	labels[corev1.LabelHostname] = name
	allocatable, capacity := claim.Status.Allocatable, claim.Status.Capacity
	if len(allocatable) == 0 {
		allocatable, capacity = smallestOption(claim, reqs, its)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: claim.Spec.Taints, ProviderID: claim.Status.ProviderID},
		Status:     corev1.NodeStatus{Allocatable: allocatable, Capacity: capacity},
	}
}

func smallestOption(claim *karpv1.NodeClaim, reqs []corev1.NodeSelectorRequirement, its []*cloud.InstanceType) (corev1.ResourceList, corev1.ResourceList) {
	var allowed []string
	for _, r := range reqs {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
			allowed = r.Values
		}
	}
	var best *cloud.InstanceType
	for _, it := range its {
		if !slices.Contains(allowed, it.Name) {
			continue
		}
		if best == nil || cpuOf(it.Allocatable()).Cmp(*cpuOf(best.Allocatable())) < 0 {
			best = it
		}
	}
	if best == nil {
		// Nothing is known about its size: count only what was planned onto it.
		return claim.Spec.Resources.Requests, claim.Spec.Resources.Requests
	}
	return best.Allocatable(), best.Capacity
}

func onNode(p *corev1.Pod, node string) *corev1.Pod {
	out := p.DeepCopy()
	out.Spec.NodeName = node
	return out
}

// PoolUsage adds up, per NodePool, the capacity its live NodeClaims hold (the largest instance
// type a claim may launch as, until it has launched) and their count.
func PoolUsage(claims []*karpv1.NodeClaim, typesByPool map[string][]*cloud.InstanceType) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	for _, claim := range claims {
		pool := claim.Labels[karpv1.NodePoolLabelKey]
		if pool == "" || claim.DeletionTimestamp != nil {
			continue
		}
		capacity := claim.Status.Capacity
		if len(capacity) == 0 {
			capacity = largestOption(claim, typesByPool[pool])
		}
		used := scheduling.Add(out[pool], capacity)
		out[pool] = scheduling.Add(used, corev1.ResourceList{ResourceNodes: *resource.NewQuantity(1, resource.DecimalSI)})
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

func cpuOf(list corev1.ResourceList) *resource.Quantity {
	q := list[corev1.ResourceCPU]
	return &q
}
