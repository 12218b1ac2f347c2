package provision

import (
	"context"

	"github.com/tailor-sh/tailor/pkg/provision/gangdomain"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// gangTopologyKey is the node label whose one value every pod of the gang must share: the key of
// its PodGroup's spec.schedulingConstraints.topology (TopologyAwareWorkloadScheduling), or "".
// kube-scheduler's TopologyPlacementGenerator then tries the gang in one domain of the key at a
// time, so capacity spread over two domains is capacity it never binds the gang to.
func (p *Provisioner) gangTopologyKey(g planner.Gang) string {
	pg, err := p.opts.PodGroups.PodGroups(g.Namespace).Get(g.Name)
	if err != nil || pg.Spec.SchedulingConstraints == nil || len(pg.Spec.SchedulingConstraints.Topology) == 0 {
		return ""
	}
	return pg.Spec.SchedulingConstraints.Topology[0].Key
}

// oneDomainGangs pins the pending pods of each gang that asks for one topology domain to one
// domain (see gangdomain.PinGangs), with the PodGroups the scheduler sees.
func (p *Provisioner) oneDomainGangs(ctx context.Context, pl *planner.Planner, in planner.Input) planner.Input {
	return gangdomain.PinGangs(ctx, pl, in, p.gangOf(), p.gangTopologyKey)
}
