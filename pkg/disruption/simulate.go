package disruption

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision"
)

// Planner is the part of the provisioning planner a simulation asks.
type Planner interface {
	Plan(ctx context.Context, in provision.Input) *provision.Plan
}

// Outcome is what removing a set of candidates would take: new NodeClaims for the pods that fit
// nowhere else (none when the others hold them all), or why it cannot be done.
type Outcome struct {
	Replacements []*provision.PlannedClaim
	// Unplaceable says why some pod would fit nowhere; the removal is then off.
	Unplaceable string
}

// OK reports whether every pod found a place.
func (o *Outcome) OK() bool { return o.Unplaceable == "" }

// simulate asks the planner where the candidates' pods would go if the candidates were gone:
// onto the other nodes, or onto new NodeClaims from the NodePools. It is the very plan the
// provisioner would make if those nodes were tainted now.
//
// The candidates stay in the snapshot as ghosts: the same labels but no hostname, a
// karpenter.sh/disrupted taint, no room and no pods. Topology spread keeps counting their zones
// as domains (as it will once the new node is up there or elsewhere), but not their hostnames,
// which really do go away; and no pod can be placed on them, whatever it tolerates.
func simulate(ctx context.Context, pl Planner, s *State, removed []*Candidate) *Outcome {
	gone := map[string]bool{}
	var pending []*corev1.Pod
	for _, c := range removed {
		gone[c.Node.Name] = true
	}
	view := s.cluster().View(s.TypesByPool)
	in := provision.Input{InFlight: view.InFlight, Pools: s.pools(), DaemonSets: s.DaemonSets}
	for _, n := range view.Nodes {
		if gone[n.Name] {
			in.Nodes = append(in.Nodes, ghost(n))
			continue
		}
		in.Nodes = append(in.Nodes, n)
	}
	for _, p := range view.Pods {
		if gone[p.Spec.NodeName] {
			continue
		}
		in.Pods = append(in.Pods, p)
	}
	for _, c := range removed {
		for _, p := range c.Pods {
			pending = append(pending, provision.Unbound(p))
		}
	}
	// Pods of nodes that are already leaving need room too; a plan that took it from them would
	// strand them.
	pending = append(pending, view.Reschedulable...)
	in.Pending = pending
	if len(pending) == 0 {
		return &Outcome{}
	}
	plan := pl.Plan(ctx, in)
	if len(plan.Unplaceable) > 0 {
		u := plan.Unplaceable[0]
		var reasons []string
		for pool, why := range u.Reasons {
			if pool != "" {
				why = pool + ": " + why
			}
			reasons = append(reasons, why)
		}
		return &Outcome{Unplaceable: fmt.Sprintf("pod %s/%s would fit nowhere (%s)", u.Pod.Namespace, u.Pod.Name, strings.Join(reasons, "; "))}
	}
	if len(plan.InFlight) > 0 {
		// Capacity in flight may still fail to launch; a removal must not depend on it.
		return &Outcome{Unplaceable: "some pods would go to capacity that is still launching"}
	}
	return &Outcome{Replacements: plan.Claims}
}

// ghost is the node as a removed candidate: see simulate.
func ghost(n *corev1.Node) *corev1.Node {
	g := n.DeepCopy()
	delete(g.Labels, corev1.LabelHostname)
	g.Spec.Taints = append(g.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
	zero := resource.MustParse("0")
	g.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: zero, corev1.ResourceMemory: zero, corev1.ResourcePods: zero}
	return g
}
