package harness

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/plan"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// PriceTolerance is how much dearer than the offline plan the live fleet may be. The plan sees
// every pod at once; the sandbox's provisioner sees them in batches as the controllers make them
// (DaemonSets first, then each workload), and a later batch may open a node an all-at-once plan
// would have shared. Consolidation is what should close that gap over time; the ratio is logged
// for every seed so the tolerance can be tightened as it does.
const PriceTolerance = 1.25

// FleetPrice sums, over the nodes Tailor launched, the price of each node's offering.
func FleetPrice(ctx context.Context, cp cloud.CloudProvider, r *Reading) float64 {
	prices := map[cloud.OfferingKey]float64{}
	for i := range r.Pools {
		its, err := cp.InstanceTypes(ctx, &r.Pools[i])
		if err != nil {
			continue
		}
		for _, it := range its {
			for _, o := range it.Offerings {
				prices[cloud.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] = o.PricePerHour
			}
		}
	}
	total := 0.0
	for name := range r.launched() {
		if n := r.node(name); n != nil {
			l := n.Labels
			total += prices[cloud.OfferingKey{InstanceType: l[corev1.LabelInstanceTypeStable], Zone: l[corev1.LabelTopologyZone], CapacityType: l[karpv1.CapacityTypeLabelKey]}]
		}
	}
	return total
}

// PlanPrice is what `tailor plan -f dir` prices the scenario's manifests at, over the catalog of
// the seed's cloud: the fake cloud's simulated one, or, for the AWS cloud, EC2's types in the
// emulator's region (`tailor plan --region`), which the emulator serves.
func PlanPrice(ctx context.Context, dir string, which Cloud) (*plan.Result, error) {
	if which == AWS {
		catalog, err := tailoraws.FactsCatalog(emulator.Region, fake.Zones())
		if err != nil {
			return nil, err
		}
		return planOver(ctx, dir, catalog, "ec2 "+emulator.Region)
	}
	return planOver(ctx, dir, fake.Catalog(), "fake")
}

// planOver plans the scenario's manifests in dir over catalog, as `tailor plan` does.
func planOver(ctx context.Context, dir string, catalog []*cloud.InstanceType, name string) (*plan.Result, error) {
	files, err := sandbox.ManifestFiles([]string{dir})
	if err != nil {
		return nil, err
	}
	m, err := plan.Load(files)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return plan.Run(ctx, m, plan.Options{SchedulerName: "tailor", Catalog: catalog, CatalogName: name})
}
