package provision

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// PlanApart plans pods that do not exist (a ProvisioningRequest's, shaped from its PodTemplates)
// over the cluster as the provisioner's next plan will see it: the nodes, the NodeClaims in
// flight, the pods bound, assumed or planned onto them, and the room already booked (the Pods
// lister the provisioner was given shows bookings as pods). With launch false the pools are left
// out, so the plan says whether the pods fit the capacity there is and in flight; with launch true
// it may open claims, under the pools' limits, which the caller creates itself. It also says why
// each NodePool left out of the plan cannot launch now (its node class is not ready, or launches
// are held back after a failure), or that there is none yet: a plan without them is no final
// answer. pl must be a planner of its own: planners are not safe for concurrent use.
func (p *Provisioner) PlanApart(ctx context.Context, pl *planner.Planner, pods []*corev1.Pod, launch bool) (*planner.Plan, []string, error) {
	r, err := p.readCluster(ctx)
	if err != nil {
		return nil, nil, err
	}
	ledger := p.Ledger()
	cluster := &planner.Cluster{Nodes: r.nodes, Pods: r.pods, Claims: r.claims, Planned: ledger.Planned, Assumed: ledger.Assumed}
	view := cluster.View(r.typesByPool)
	dss, err := p.opts.DaemonSets.List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	in := planner.Input{Pending: pods, Nodes: view.Nodes, Pods: view.Pods, InFlight: view.InFlight, Unsettled: view.Unsettled,
		DaemonSets: planner.DaemonSetPods(dss)}
	var held []string
	if launch {
		in.Pools = r.pools
		for _, u := range r.unavailable {
			held = append(held, fmt.Sprintf("NodePool %q: %s", u.pool.Name, u.message))
		}
		if len(r.pools) == 0 && len(r.unavailable) == 0 {
			// No NodePool at all is no final answer either: one applied with the request may
			// not have reached the informer, and one applied later should serve it.
			held = append(held, "no NodePool exists yet")
		}
	}
	return pl.Plan(ctx, in), held, nil
}
