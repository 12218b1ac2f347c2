package nodepool

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// EmptyDomains returns the empty nodes that stand for the domains the pools may launch in: one
// per zone, capacity type and architecture each pool offers, labelled with each combination of
// the values of its free custom keys that reads says the plan's pods read (domainChoices). A key
// whose value a claim settles (customlabels.go) is, like a zone, a key whose domains are the
// values the pool may create, as in Karpenter's topology: Karpenter's spot to on-demand ratio
// recipe spreads over such a key, whose values no node carries before the first launch. Each node
// carries its pool's labels and taints, so the plugin's own rules (nodeAffinityPolicy,
// nodeTaintsPolicy, minDomains, matchLabelKeys) say which of them count for a pod.
func EmptyDomains(pools []*State, reads func(key string) bool) []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for _, ps := range pools {
		choices := ps.domainChoices(reads)
		n := 0
		for _, i := range ps.DomainFirsts() {
			c := ps.Compatible[i]
			for _, choice := range choices {
				n++
				ni := framework.NewNodeInfo()
				ni.SetNode(c.TemplateNode(fmt.Sprintf("%s-domain-%d", ps.NodePool.Name, n), choice))
				out = append(out, ni)
			}
		}
	}
	return out
}

// domainChoices are the labels of the pool's free keys that the empty domains carry: every
// combination of the values of the keys that reads says pods read, when there are no more than
// maxLabelChoices; past that, as many rows as the key with the most values has, each value of
// every key in some row, so that each value is still a domain of its key. noChoice when the pool
// has no such key. A key that allows any value offers no values to count (Karpenter registers
// none either); the claim of a pod that names one is the domain.
func (ps *State) domainChoices(reads func(key string) bool) []LabelChoice {
	var keys []string
	var lists [][]string
	total, longest := 1, 0
	for _, f := range ps.Free {
		if len(f.Values) == 0 || !reads(f.Key) {
			continue
		}
		keys, lists = append(keys, f.Key), append(lists, f.Values)
		total = min(total*len(f.Values), maxLabelChoices+1)
		longest = max(longest, len(f.Values))
	}
	switch {
	case len(keys) == 0:
		return noChoice
	case total <= maxLabelChoices:
		return product(keys, lists)
	}
	out := make([]LabelChoice, longest)
	for i := range out {
		for k, vals := range lists {
			out[i] = append(out[i], keyValue{keys[k], vals[i%len(vals)]})
		}
	}
	return out
}

// DomainFirsts are the places in Compatible (cheapest first) of the first offering of each
// zone, capacity type and architecture: the offerings EmptyDomains makes its nodes of. They
// depend on the catalog alone, so a prepared pool works them out once for all its plans rather
// than reading the labels of every offering per plan.
func (ps *State) DomainFirsts() []int {
	if ps.domainFirsts != nil || len(ps.Compatible) == 0 {
		return ps.domainFirsts
	}
	seen := map[string]bool{}
	for i, c := range ps.Compatible {
		key := c.Offering.Zone + "/" + c.Offering.CapacityType + "/" + c.Labels[corev1.LabelArchStable]
		if !seen[key] {
			seen[key] = true
			ps.domainFirsts = append(ps.domainFirsts, i)
		}
	}
	return ps.domainFirsts
}
