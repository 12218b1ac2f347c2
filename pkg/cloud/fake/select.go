package fake

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// choose returns the cheapest available offering that a node for the claim could be launched
// from: its labels satisfy every requirement and its allocatable covers the requests. minValues
// is the planner's business, not the cloud's, so it is ignored here. ice is the injected shortage
// as the caller read it under p.mu; the rest is the fixed catalog, so choose needs no lock.
func (p *Provider) choose(claim *karpv1.NodeClaim, ice map[cloud.OfferingKey]bool) (*cloud.InstanceType, cloud.Offering, error) {
	selector, err := requirementsSelector(claim.Spec.Requirements)
	if err != nil {
		return nil, cloud.Offering{}, fmt.Errorf("nodeclaim %q has invalid requirements: %w", claim.Name, err)
	}
	var (
		bestType    *cloud.InstanceType
		best        cloud.Offering
		iced        []cloud.OfferingKey
		matching    int
		fitting     int
		requests    = claim.Spec.Resources.Requests
		probe       corev1.Node
		unavailable int
	)
	for _, it := range p.catalog {
		fits := covers(it.Allocatable(), requests)
		// The claim's own labels (nodepool, template labels) are part of the set because the
		// node will carry them; Karpenter puts single-valued requirements there too. One set per
		// type, its offering's labels set in turn: a set per offering was most of a launch's CPU
		// in a fleet of thousands.
		probe.ObjectMeta = metav1.ObjectMeta{Labels: typeLabels(claim, it)}
		for _, o := range it.Offerings {
			setOfferingLabels(probe.Labels, o, p.region)
			if selector != nil && !selector.Match(&probe) {
				continue
			}
			matching++
			if !fits {
				continue
			}
			fitting++
			key := cloud.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
			switch {
			case ice[key]:
				iced = append(iced, key)
			case !o.Available:
				unavailable++
			case bestType == nil || cheaper(it, o, bestType, best):
				bestType, best = it, o
			}
		}
	}
	// Like a fleet request, the launch tried the short offerings and learned they are short.
	p.unavailable.Mark(iced...)
	switch {
	case bestType != nil:
		return bestType, best, nil
	case len(iced) > 0:
		return nil, cloud.Offering{}, &cloud.InsufficientCapacityError{
			Offerings: iced,
			Message: fmt.Sprintf("nodeclaim %q: every compatible offering is out of capacity (%d injected, %d unavailable)",
				claim.Name, len(iced), unavailable),
		}
	case fitting > 0:
		return nil, cloud.Offering{}, fmt.Errorf("nodeclaim %q: all %d compatible offerings are unavailable", claim.Name, fitting)
	case matching > 0:
		return nil, cloud.Offering{}, fmt.Errorf("nodeclaim %q: %d offerings satisfy its requirements but none has allocatable for requests %s",
			claim.Name, matching, formatResources(requests))
	default:
		return nil, cloud.Offering{}, fmt.Errorf("nodeclaim %q: no offering satisfies its requirements", claim.Name)
	}
}

// requirementsSelector ANDs the requirements in one term, the way a NodeClaim means them. It
// returns nil for no requirements, because an empty term matches nothing.
func requirementsSelector(reqs []karpv1.NodeSelectorRequirementWithMinValues) (*nodeaffinity.NodeSelector, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	term := corev1.NodeSelectorTerm{}
	for _, r := range reqs {
		req, err := nodeSelectorRequirement(r)
		if err != nil {
			return nil, err
		}
		term.MatchExpressions = append(term.MatchExpressions, req)
	}
	return nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}})
}

// nodeSelectorRequirement rewrites Karpenter's inclusive bounds, which node affinity does not
// know, as the exclusive ones moved by one: the labels they apply to are integers.
func nodeSelectorRequirement(r karpv1.NodeSelectorRequirementWithMinValues) (corev1.NodeSelectorRequirement, error) {
	req := corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
	if r.Operator != karpv1.NodeSelectorOpGte && r.Operator != karpv1.NodeSelectorOpLte {
		return req, nil
	}
	if len(r.Values) != 1 {
		return req, fmt.Errorf("%s %s needs exactly one value", r.Key, r.Operator)
	}
	n, err := strconv.ParseInt(r.Values[0], 10, 64)
	if err != nil {
		return req, fmt.Errorf("%s %s: %w", r.Key, r.Operator, err)
	}
	if r.Operator == karpv1.NodeSelectorOpGte {
		req.Operator, req.Values = corev1.NodeSelectorOpGt, []string{strconv.FormatInt(n-1, 10)}
	} else {
		req.Operator, req.Values = corev1.NodeSelectorOpLt, []string{strconv.FormatInt(n+1, 10)}
	}
	return req, nil
}

func covers(allocatable, requests corev1.ResourceList) bool {
	for name, q := range requests {
		if q.IsZero() {
			continue
		}
		a, ok := allocatable[name]
		if !ok || q.Cmp(a) > 0 {
			return false
		}
	}
	return true
}

// cheaper orders by price, then by name, zone and capacity type, so that equal prices still give
// one answer on every run.
func cheaper(it *cloud.InstanceType, o cloud.Offering, bestType *cloud.InstanceType, best cloud.Offering) bool {
	if o.PricePerHour != best.PricePerHour {
		return o.PricePerHour < best.PricePerHour
	}
	if it.Name != bestType.Name {
		return it.Name < bestType.Name
	}
	if o.Zone != best.Zone {
		return o.Zone < best.Zone
	}
	return o.CapacityType < best.CapacityType
}

func formatResources(rl corev1.ResourceList) string {
	parts := make([]string, 0, len(rl))
	for name, q := range rl {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}
