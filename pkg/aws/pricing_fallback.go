package aws

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
)

// fallbackOnDemandPrices are the built-in on-demand Linux prices of the region, used from start-up
// until the Pricing API answers (or when it cannot be reached at all): EC2's published price of
// every type in the snapshot of EC2's facts (pkg/aws/ec2facts), by its documented rule for
// regions the published list does not cover, and us-east-1's for a region the snapshot does not
// model, as Karpenter falls back on its us-east-1 table. So every type EC2 sold at the snapshot's
// date can launch before the first price refresh; a newer type waits for the Pricing API.
func fallbackOnDemandPrices(region string) map[string]float64 {
	types := ec2facts.TypesIn(region)
	out := make(map[string]float64, len(types))
	for _, t := range types {
		if p, ok := ec2facts.OnDemand(region, t.Name); ok {
			out[t.Name] = p
		}
	}
	return out
}

// logBuiltInPrices says where the region's built-in prices come from. A region whose prices
// the snapshot does not publish is priced by a rule until the Pricing API answers, which is
// worth a line at the default level; a published list is not.
func logBuiltInPrices(ctx context.Context, region string) {
	logger := klog.FromContext(ctx)
	if !ec2facts.Published(region) {
		logger.Info("built-in on-demand prices are a rule until the Pricing API answers", "region", region,
			"source", ec2facts.PriceSource(region))
		return
	}
	logger.V(2).Info("built-in on-demand prices", "region", region, "source", ec2facts.PriceSource(region))
}
