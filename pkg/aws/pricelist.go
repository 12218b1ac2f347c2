package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	pricingapi "github.com/aws/aws-sdk-go-v2/service/pricing"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// PriceList is the provider's price cache on its own: on-demand prices from the Pricing API and
// spot prices from the spot price history, read with the same clients and fallbacks as the
// provider's. Tools that price running nodes without launching any (`tailor top`) use it, so a
// node's price there is the one consolidation weighs.
type PriceList struct {
	prices *prices
	region string
}

// NewPriceList builds a price list for opts' region (and endpoint, for the emulator). Only
// Region, Endpoint and the retry options are read. It does no I/O until Refresh.
func NewPriceList(ctx context.Context, opts Options) (*PriceList, error) {
	cfg, err := SDKConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	pc := pricingapi.NewFromConfig(cfg, func(o *pricingapi.Options) { o.Region = pricingRegion(cfg.Region) })
	return &PriceList{prices: newPrices(ec2.NewFromConfig(cfg), pc, cfg.Region, clock.RealClock{}), region: cfg.Region}, nil
}

// Refresh reads whichever list is due (at most every CatalogRefreshInterval); a failed read keeps
// the previous prices and is logged.
func (l *PriceList) Refresh(ctx context.Context) { l.prices.refresh(ctx) }

// Region is the region the prices are for.
func (l *PriceList) Region() string { return l.region }

// Price is the hourly price of an instance type in a zone with a capacity type, and false when
// nothing prices it.
func (l *PriceList) Price(instanceType, zone, capacityType string) (float64, bool) {
	if capacityType == karpv1.CapacityTypeSpot {
		return l.prices.spotPrice(instanceType, zone)
	}
	return l.prices.onDemandPrice(instanceType)
}
