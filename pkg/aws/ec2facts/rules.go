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
// docs/reference/ec2-catalog.md. None invents a type: a region offers a subset of the
// snapshot's types.

// pricedRegion is where a region's prices come from: its own published list, or another
// region's list times a factor.
type pricedRegion struct {
	from   string
	factor float64
}

// ruleRegions are the regions the catalog models without a published price list of their own.
// The source publishes on-demand prices for us-east-1, us-gov-east-1 and us-gov-west-1 only
// (Karpenter's generator reads no other commercial region), so:
//   - us-east-2 and us-west-2 take us-east-1's types and prices: EC2 lists the same on-demand
//     price in the three US regions for nearly every current type;
//   - eu-west-1 takes us-east-1's types at 1.11 times the price, the usual premium of Ireland over
//     N. Virginia on current general-purpose, compute and memory types. An approximation, not a
//     published figure.
//
// A region with a published list of its own always uses it, and is modelled without a rule.
var ruleRegions = map[string]pricedRegion{
	"us-east-2": {from: "us-east-1", factor: 1},
	"us-west-2": {from: "us-east-1", factor: 1},
	"eu-west-1": {from: "us-east-1", factor: 1.11},
}

// FallbackRegion stands in for a region the catalog does not model, as Karpenter's built-in
// prices fall back on us-east-1's.
const FallbackRegion = "us-east-1"

// Regions lists the modelled regions, sorted: those with a published price list, and those
// priced by a rule.
func Regions() []string {
	seen := map[string]bool{}
	for r := range Load().OnDemandLinux {
		seen[r] = true
	}
	for r := range ruleRegions {
		seen[r] = true
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// PublishedRegions lists the regions whose on-demand prices are EC2's published figures, sorted.
func PublishedRegions() []string {
	out := make([]string, 0, len(Load().OnDemandLinux))
	for r := range Load().OnDemandLinux {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Modelled says whether the catalog models the region (else FallbackRegion stands in).
func Modelled(region string) bool {
	_, ok := Load().OnDemandLinux[region]
	_, rule := ruleRegions[region]
	return ok || rule
}

// Published says whether the region's on-demand prices are EC2's published figures for it, not
// a rule.
func Published(region string) bool {
	_, ok := Load().OnDemandLinux[region]
	return ok
}

func ruleOf(region string) pricedRegion {
	if Published(region) {
		return pricedRegion{from: region, factor: 1}
	}
	if r, ok := ruleRegions[region]; ok {
		return r
	}
	return pricedRegion{from: FallbackRegion, factor: 1}
}

// PriceSource says, for people, where the region's on-demand prices come from: EC2's published
// list for the region, or the rule that stands in for one.
func PriceSource(region string) string {
	date := Load().Source.CommitDate
	r := ruleOf(region)
	switch {
	case Published(region):
		return fmt.Sprintf("EC2's published on-demand prices, snapshot %s", date)
	case Modelled(region) && r.factor != 1:
		return fmt.Sprintf("rule: %s's published on-demand prices x %g, snapshot %s has none for %s", r.from, r.factor, date, region)
	case Modelled(region):
		return fmt.Sprintf("rule: %s's published on-demand prices, snapshot %s has none for %s", r.from, date, region)
	}
	return fmt.Sprintf("rule: %s's published on-demand prices, %s is not in snapshot %s", r.from, region, date)
}

// TypesIn lists the types offered in the region, sorted by name: those priced there, as EC2's
// price list has no price for a type a region does not sell (a region priced by a rule offers
// the types of the region its prices come from). A region not modelled gets FallbackRegion's.
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
		out = append(out, fmt.Sprintf("%s: %d types in %d families; on-demand prices: %s", r, len(types), Families(types), PriceSource(r)))
	}
	return out
}
