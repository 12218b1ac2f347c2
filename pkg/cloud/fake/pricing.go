package fake

import (
	"hash/fnv"
	"math"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// SIMULATED prices. The rates are loosely modelled on public on-demand list prices so that the
// relations planning depends on hold: memory-heavy categories cost more per vCPU, Graviton (arm64)
// is about 20% cheaper than x86 of the same generation, newer generations cost a little more, GPUs
// dominate the price of GPU types, and spot is a fraction of on-demand that differs by type and
// zone. The absolute numbers are invented.

// onDemandPerVCPU is the hourly on-demand rate per vCPU of an x86 type in the oldest generation
// of its category. Accelerated types other than g5 are priced per type in their family's row.
var onDemandPerVCPU = map[string]float64{
	"c": 0.0425,
	"m": 0.048,
	"r": 0.063,
	"t": 0.0416,
	"g": 0.0515,
	"x": 0.0835,
	"i": 0.078,
	"d": 0.125,
}

// onDemandPerGPU is added per GPU on rule-priced GPU types (g5); with the g rate above it
// reproduces the shape of the g5 price list, where a 12xlarge (4 GPUs) costs more than a 16xlarge
// (1 GPU).
const onDemandPerGPU = 0.80

const armDiscount = 0.8

// generationPremium makes newer generations dearer than older ones; generations at or below 5
// (including the burstable t3 and t4g) pay none.
var generationPremium = map[string]float64{"6": 1.02, "7": 1.06}

// onDemandBase is a shape's hourly on-demand price before the zone factor: the family's own
// price for the size, else the category's rate per vCPU (plus GPUs), discounted for arm64,
// raised for newer generations and adjusted by the family's factor.
func onDemandBase(f family, s Shape) float64 {
	if p, ok := f.prices[s.Size]; ok {
		return p
	}
	base := onDemandPerVCPU[s.Category] * float64(s.VCPUs)
	if s.GPU != nil {
		base += onDemandPerGPU * float64(s.GPU.Count)
	}
	if s.Arch == "arm64" {
		base *= armDiscount
	}
	if p, ok := generationPremium[s.Generation]; ok {
		base *= p
	}
	if f.priceFactor > 0 {
		base *= f.priceFactor
	}
	return base
}

// zoneFactor is the small, fixed per-zone difference in on-demand price. Real on-demand prices do
// not vary by zone; the fake does so that a zone choice is never a tie between equal offerings.
// It goes by the zone's place in its region, so the first three zones of every region price as
// us-west-2's do.
var zoneFactor = []float64{1.000, 1.004, 0.998}

// Spot is between spotMin and spotMin+spotSpread of on-demand.
const (
	spotMin    = 0.30
	spotSpread = 0.15
)

func offerings(s Shape, zones []string) []cloud.Offering {
	var out []cloud.Offering
	for i, zone := range zones {
		od := s.OnDemandBase * zoneFactor[i%len(zoneFactor)]
		out = append(out,
			cloud.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, PricePerHour: round4(od), Available: true},
			cloud.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, PricePerHour: round4(od * spotFraction(s.Name, zone)), Available: true},
		)
	}
	return out
}

// spotFraction hashes type and zone so that the cheapest spot zone differs between types, as it
// does on EC2, while staying the same from run to run.
func spotFraction(name, zone string) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name + "/" + zone))
	return spotMin + spotSpread*float64(h.Sum64()%10000)/10000
}

// round4 keeps four decimals, the precision EC2 publishes prices with.
func round4(v float64) float64 {
	return math.Round(v*1e4) / 1e4
}
