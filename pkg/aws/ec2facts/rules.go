package ec2facts

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"
)

// The rules below fill in what the snapshot's sources do not publish. Each is deterministic, so
// every run of the emulator and of `tailor plan` sees the same catalog, and each is listed in
// docs/catalog.md. None invents a type: a region offers a subset of the snapshot's types.

// pricedRegion is where a region's prices come from: its own published list, or another
// region's list times a factor.
type pricedRegion struct {
	from   string
	factor float64
}

// regions are the regions the catalog models. The source publishes on-demand prices for
// us-east-1 only (Karpenter's generator reads no other region), so:
//   - us-east-2 and us-west-2 take us-east-1's types and prices: EC2 lists the same on-demand
//     price in the three US regions for nearly every current type;
//   - eu-west-1 takes us-east-1's types at 1.11 times the price, the usual premium of Ireland over
//     N. Virginia on current general-purpose, compute and memory types. An approximation, not a
//     published figure.
var regions = map[string]pricedRegion{
	"us-east-1": {from: "us-east-1", factor: 1},
	"us-east-2": {from: "us-east-1", factor: 1},
	"us-west-2": {from: "us-east-1", factor: 1},
	"eu-west-1": {from: "us-east-1", factor: 1.11},
}

// FallbackRegion stands in for a region the catalog does not model, as Karpenter's built-in
// prices fall back on us-east-1's.
const FallbackRegion = "us-east-1"

// Regions lists the modelled regions, sorted.
func Regions() []string {
	out := make([]string, 0, len(regions))
	for r := range regions {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Modelled says whether the catalog models the region (else FallbackRegion stands in).
func Modelled(region string) bool {
	_, ok := regions[region]
	return ok
}

func ruleOf(region string) pricedRegion {
	if r, ok := regions[region]; ok {
		return r
	}
	return regions[FallbackRegion]
}

// TypesIn lists the types offered in the region, sorted by name: those priced there, as EC2's
// price list has no price for a type a region does not sell. A region not modelled gets
// FallbackRegion's.
func TypesIn(region string) []*Type {
	s := Load()
	prices := s.OnDemandLinux[ruleOf(region).from]
	var out []*Type
	for i := range s.Types {
		if _, ok := prices[s.Types[i].Name]; ok {
			out = append(out, &s.Types[i])
		}
	}
	return out
}

// OnDemand is the hourly on-demand Linux price of the type in the region, and false for a type
// not offered there.
func OnDemand(region, instanceType string) (float64, bool) {
	r := ruleOf(region)
	p, ok := Load().OnDemandLinux[r.from][instanceType]
	if !ok {
		return 0, false
	}
	return round(p * r.factor), true
}

// WindowsLicensePerVCPUHour is what a Windows Server licence adds to an instance's hourly price
// per vCPU, on demand and on spot. The source has no Windows prices; this is the rate at which
// EC2's published Windows and Linux prices of a type differ, about 0.046 USD per vCPU-hour.
const WindowsLicensePerVCPUHour = 0.046

// Windows is a type's Windows price given its Linux price.
func Windows(linux float64, vcpus int32) float64 {
	return round(linux + WindowsLicensePerVCPUHour*float64(vcpus))
}

// Spot is the type's spot price in a zone: a deterministic spread in place of the spot market,
// which no snapshot can hold. The family sets the discount (30% to 70% of on-demand, as spot
// discounts differ by family far more than by size), and each zone moves it by up to ±4%, so
// zones differ as they do on EC2. It is always below on-demand.
func Spot(onDemand float64, instanceType, zone string) float64 {
	family, _, _ := strings.Cut(instanceType, ".")
	level := 0.30 + 0.40*unit(family)
	jitter := 1 + 0.08*(unit(instanceType+"/"+zone)-0.5)
	return round(onDemand * level * jitter)
}

// unit hashes a string to [0, 1).
func unit(s string) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return float64(h.Sum64()>>11) / float64(1<<53)
}

// round keeps the five decimals EC2's price lists carry.
func round(p float64) float64 { return math.Round(p*1e5) / 1e5 }

// Families counts the distinct families of the types.
func Families(types []*Type) int {
	seen := map[string]bool{}
	for _, t := range types {
		family, _, _ := strings.Cut(t.Name, ".")
		seen[family] = true
	}
	return len(seen)
}

// Summary is one line per modelled region: its types and families, for people.
func Summary() []string {
	var out []string
	for _, r := range Regions() {
		types := TypesIn(r)
		out = append(out, fmt.Sprintf("%s: %d types in %d families", r, len(types), Families(types)))
	}
	return out
}
