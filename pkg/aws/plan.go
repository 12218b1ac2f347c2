package aws

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// maxInstanceTypes bounds the types one CreateFleet may choose from, as Karpenter does: enough
// to ride out shortages, few enough to keep the request small.
const maxInstanceTypes = 60

// launchOption is one offering a claim may launch on.
type launchOption struct {
	t        *launchableType
	offering cloud.Offering
}

// launchPlan is what to ask CreateFleet for: one capacity type, and the offerings to try.
type launchPlan struct {
	capacityType string
	options      []launchOption
	// fallback marks the launch after reserved capacity turned out full. It takes a client token
	// of its own: EC2 answers a token it has seen with that call's result, the refusal.
	fallback bool
}

// planLaunch picks the offerings for a claim: those whose labels meet its requirements and whose
// allocatable covers its requests. As in Karpenter, reserved capacity is used first when allowed
// and available (and then only reservations of one type: a fleet launches either into ordinary
// reservations or into Capacity Blocks); else spot when allowed and available, skipping spot
// offerings dearer than the cheapest on-demand one; else on-demand. The cheapest
// maxInstanceTypes types are kept. zoneIDs and region complete the labels a node would carry.
// Without allowReserved, reserved offerings are left out: the fallback after the reservations
// turned out full.
func planLaunch(claim *karpv1.NodeClaim, types []*launchableType, zoneIDs map[string]string, region string, allowReserved bool) (*launchPlan, error) {
	sel, err := scheduling.NewSelector(scheduling.NodeSelectorRequirements(claim.Spec.Requirements))
	if err != nil {
		return nil, fmt.Errorf("nodeclaim %q: %w", claim.Name, err)
	}
	candidates, err := launchCandidates(claim, sel, types, zoneIDs, region, allowReserved)
	if err != nil {
		return nil, err
	}
	cheapestOnDemand := -1.0
	for _, c := range candidates {
		if c.offering.CapacityType == karpv1.CapacityTypeOnDemand && (cheapestOnDemand < 0 || c.offering.PricePerHour < cheapestOnDemand) {
			cheapestOnDemand = c.offering.PricePerHour
		}
	}
	// Spot dearer than the cheapest on-demand offering is never worth its interruptions.
	worthIt := func(c launchOption) bool {
		return c.offering.CapacityType != karpv1.CapacityTypeSpot || cheapestOnDemand < 0 || c.offering.PricePerHour <= cheapestOnDemand
	}
	plan := &launchPlan{capacityType: karpv1.CapacityTypeOnDemand}
	for _, c := range candidates {
		if c.offering.CapacityType == karpv1.CapacityTypeSpot && worthIt(c) {
			plan.capacityType = karpv1.CapacityTypeSpot
			break
		}
	}
	if reserved := reservedOptions(candidates); len(reserved) > 0 {
		plan.capacityType = karpv1.CapacityTypeReserved
		candidates = reserved
	}
	for _, c := range candidates {
		if c.offering.CapacityType == plan.capacityType && worthIt(c) {
			plan.options = append(plan.options, c)
		}
	}
	plan.options = cheapestTypes(plan.options)
	return plan, nil
}

// launchCandidates are the available offerings whose labels meet the claim's requirements and
// whose allocatable covers its requests; with none, an error that says which of the two failed.
func launchCandidates(claim *karpv1.NodeClaim, sel *scheduling.Selector, types []*launchableType, zoneIDs map[string]string, region string, allowReserved bool) ([]launchOption, error) {
	var (
		candidates  []launchOption
		unavailable []cloud.OfferingKey
		matching    int
	)
	for _, t := range types {
		fits := scheduling.Fits(claim.Spec.Resources.Requests, t.it.Allocatable())
		for _, o := range t.it.Offerings {
			// The claim's own labels (its NodePool, template labels) are on the node too, and
			// claims carry requirements on them.
			labels := offeringLabels(t.it, o, zoneIDs, region)
			for k, v := range claim.Labels {
				if _, set := labels[k]; !set {
					labels[k] = v
				}
			}
			if !sel.Matches(labels) || (!allowReserved && o.CapacityType == karpv1.CapacityTypeReserved) {
				continue
			}
			matching++
			switch {
			case !fits:
			case !o.Available:
				unavailable = append(unavailable, cloud.OfferingKey{InstanceType: t.it.Name, Zone: o.Zone, CapacityType: o.CapacityType})
			default:
				candidates = append(candidates, launchOption{t: t, offering: o})
			}
		}
	}
	switch {
	case len(candidates) == 0 && len(unavailable) > 0:
		return nil, &cloud.InsufficientCapacityError{Offerings: unavailable,
			Message: fmt.Sprintf("nodeclaim %q: all %d compatible offerings are unavailable (recently out of capacity, or unpriced)", claim.Name, len(unavailable))}
	case len(candidates) == 0 && matching > 0:
		return nil, fmt.Errorf("nodeclaim %q: %d offerings meet its requirements but none has allocatable for its requests", claim.Name, matching)
	case len(candidates) == 0:
		return nil, fmt.Errorf("nodeclaim %q: no offering of the node class meets its requirements", claim.Name)
	}
	return candidates, nil
}

// cheapestTypes orders options by price (then type and zone, so that a plan is deterministic)
// and keeps every offering of the maxInstanceTypes cheapest types.
func cheapestTypes(options []launchOption) []launchOption {
	sort.SliceStable(options, func(i, j int) bool {
		a, b := options[i], options[j]
		if a.offering.PricePerHour != b.offering.PricePerHour {
			return a.offering.PricePerHour < b.offering.PricePerHour
		}
		if a.t.it.Name != b.t.it.Name {
			return a.t.it.Name < b.t.it.Name
		}
		return a.offering.Zone < b.offering.Zone
	})
	kept := sets.New[string]()
	out := options[:0]
	for _, o := range options {
		if !kept.Has(o.t.it.Name) && kept.Len() == maxInstanceTypes {
			continue
		}
		kept.Insert(o.t.it.Name)
		out = append(out, o)
	}
	return out
}

// reservedOptions are the reserved candidates of the reservation type of the cheapest one.
func reservedOptions(candidates []launchOption) []launchOption {
	var out []launchOption
	kind, cheapest := "", 0.0
	for _, c := range candidates {
		if c.offering.CapacityType != karpv1.CapacityTypeReserved {
			continue
		}
		if len(out) == 0 || c.offering.PricePerHour < cheapest {
			kind, cheapest = c.offering.Labels[awsv1.LabelCapacityReservationType], c.offering.PricePerHour
		}
		out = append(out, c)
	}
	kept := out[:0]
	for _, c := range out {
		if c.offering.Labels[awsv1.LabelCapacityReservationType] == kind {
			kept = append(kept, c)
		}
	}
	return kept
}
