package planner

import (
	"cmp"
	"iter"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/provision/planner/prefilter"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// The claim that grows for least. A pod that fits no claim's room joins a claim that must launch
// as a dearer type for it. Taking the first claim that opened grew whichever claim came first,
// however far its next holding type was: in Karpenter's benchmark mix, hostname-bound claims
// grew a size for a pod heavy in the resource they were short of, and the fleet launched with a
// sixth of its memory idle (1.16-1.17 × the LP bound at 5,000-20,000 pods). So the claims without
// room are weighed cheapest growth first: the price of the cheapest offering that would hold the
// pod beside the claim's pods, less the price of the one that holds them now. As with room, the
// price only orders the questions: each claim still takes the pod only if the Filter plugins
// pass (weigh).
//
// The order, key by key:
//   - the NodePool's place in the plan's order (by weight): a claim of a pool the user weighted
//     lower grows only when none of a higher one takes the pod, as a claim of it opens only then;
//   - the growth, in millionths of a dollar an hour, so that the rounding of float prices does
//     not decide between steps of the same price (in Karpenter's catalog, 0.3·n an hour, growing
//     from size 4 to 5 came out cheaper than from 1 to 2);
//   - the price the claim has now, cheapest first: of two claims that grow alike, the smaller
//     (on Karpenter's mix 1.069 and 1.081 × the bound at 500 and 2,000 pods; 1.081 and 1.096
//     dearer first, 1.084 and 1.106 with the opening order alone);
//   - the order the claims opened.

// growth is claim i's place in the order.
type growth struct {
	rank       int
	cost, base int64
	i          int
}

// Compare orders claims by growth (roomindex.Entry); claims differ in i, so no two are equal.
func (a growth) Compare(b growth) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	if c := cmp.Compare(a.cost, b.cost); c != 0 {
		return c
	}
	if c := cmp.Compare(a.base, b.base); c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

// order yields the indices of the open claims weighed in pass for a pod of kind asking for
// asks, but for those in rejecting and those of a domain that refused the pod in this pass (see
// byDomain): in the order they opened for claims with room, cheapest growth first for the
// others. The claims with room and the growth order come from r's indexes (roomindex.go), the
// rest is asked of each claim they yield. It is not reentrant: a claim that a pod joins while it
// runs must end it.
func (r *claimRooms) order(open []*openClaim, pass fillPass, asks simulation.Requests, kind kindID, shy bool, rejecting map[*openClaim]bool, by byDomain) iter.Seq[int] {
	return func(yield func(int) bool) {
		r.update(open)
		r.by = by
		clear(r.refusedIn)
		weighed := func(i int) bool {
			oc := open[i]
			if shy && oc.holding(kind) != pass.kin || rejecting[oc] {
				return false
			}
			return len(r.refusedIn) == 0 || !r.refusedIn[r.domainOf(oc)]
		}
		var side []int
		few := false
		if shy {
			side, few = r.side(open, kind, pass.kin)
		}
		switch {
		case pass.roomy && few:
			for _, i := range side {
				if r.rooms[i].holds(asks) && weighed(i) && !yield(i) {
					return
				}
			}
		case pass.roomy:
			for i := r.index.Next(0, asks); i >= 0; i = r.index.Next(i+1, asks) {
				if weighed(i) && !yield(i) {
					return
				}
			}
		default:
			for _, g := range r.growthsFor(open, asks).Of(side, few, &r.sideGrowths) {
				if weighed(g.i) && !yield(g.i) {
					return
				}
			}
		}
	}
}

// unaffordable is the growth of a claim that no offering it may grow into holds with the pod.
const unaffordable = math.MaxInt64

// micros is a price per hour in millionths of a dollar.
func micros(price float64) int64 { return int64(math.Round(price * 1e6)) }

// growth is how much dearer the claim becomes with asks on it beside its pods, and what it costs
// now: the price of the cheapest offering it may grow into that holds them, less that of the
// cheapest that holds its pods now (unaffordable when none holds them). A thrifty claim grows
// only into efficient offerings (RateEfficiency), and is priced from the cheapest efficient
// one that holds it: a claim that holds little is bound to grow at least that far (the plan's
// biggest pods need it), so room up to that offering is free. (Pricing it from the smaller type
// it would launch as now, which is not efficient, turned pods away from the claims that have
// most room left in what they will launch as: 1.10 × the bound at 5,000 and 20,000 pods of the
// mix against 1.07.)
func (oc *openClaim) growth(room claimRoom, asks simulation.Requests) (cost, base int64) {
	used, pods := oc.info.Requested, len(oc.info.Pods)
	ps := oc.pool
	if most := ps.Largest(); used.MilliCPU+asks.MilliCPU > most.MilliCPU || used.Memory+asks.Memory > most.Memory {
		// Already as big as the pool's types go: no need to read the rest of alive.
		return unaffordable, 0
	}
	// None before the claim's cheapest holding offering holds its pods (spare), so none holds
	// them with the pod.
	base = -1
	for _, i := range oc.alive[max(room.at, 0):] {
		if oc.thrifty && ps.Efficient != nil && !ps.Efficient[i] {
			continue
		}
		c := ps.Compatible[i]
		a := ps.Types[c.Typ].Alloc
		if base < 0 && a.MilliCPU >= used.MilliCPU && a.Memory >= used.Memory && a.AllowedPodNumber >= pods {
			base = micros(c.Offering.PricePerHour)
		}
		if a.MilliCPU >= used.MilliCPU+asks.MilliCPU && a.Memory >= used.Memory+asks.Memory && a.AllowedPodNumber > pods {
			// The offering holds the claim's pods too, so base is set by now.
			return micros(c.Offering.PricePerHour) - base, base
		}
	}
	return unaffordable, max(base, 0)
}

// Domains that refused the pod. Most pods that spread or lean on other pods (zone spread, zone
// affinity) are counted by zone, and in a pass the cheapest claims come in no order of zone: a
// pod that only one zone could take was refused by every claim of the other zones that came
// first, one Filter question each. At 20,000 pods of Karpenter's mix that was 76 refusals per
// zone-spread pod and 40 per zone-affinity pod (7.6 and 4.8 at 2,000). For such a pod every
// Filter plugin answers alike on two claims whose labels agree on every key the pod reads: the
// plugins that count pods by topology read the claim's labels and the pod's PreFilter state,
// which does not change while the pod is weighed, and the others read its labels, its pool's
// taints, or the pod's requests (the capacity half, asked apart). What lets a claim's own pods
// or name decide, and makes a pod asked on every claim: host ports (NodePorts reads the ports of
// the claim's pods); volumes other than those a pod carries with it (the volume plugins read the
// volumes of the claim's pods); resource claims and extended resources (DynamicResources);
// being counted by hostname (every claim is a domain of its own); and naming a node (NodeName,
// node affinity by metadata.name). So once a claim refuses the pod in every class of its
// offerings, the claims whose labels agree with it on those keys are not asked in that pass. A
// claim whose offerings do not agree on a key has no label for it and neither counts nor is
// skipped. (The profile's own node affinity, addedAffinity, by metadata.name is not looked for:
// it would have to name claims that do not exist yet.)

// byDomain says whether a pod is answered alike on the claims of one domain, and the keys that
// make its domain.
type byDomain struct {
	ok   bool
	keys [][]string
}

func byDomainOf(pod *corev1.Pod, keys podkeys.Keys) byDomain {
	if keys.All || keys.ByNode || !prefilter.Keepable(pod) || hasHostPorts(pod) || !selfContainedVolumes(pod) {
		return byDomain{}
	}
	return byDomain{ok: true, keys: [][]string{keys.Selector, keys.Topology}}
}

// selfContainedVolumes reports whether every volume of the pod is one it brings along (config,
// secrets, scratch space, what the API server projects), which no volume plugin weighs against
// the volumes of other pods on a node.
func selfContainedVolumes(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap == nil && v.Secret == nil && v.EmptyDir == nil && v.DownwardAPI == nil && v.Projected == nil {
			return false
		}
	}
	return true
}

func hasHostPorts(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					return true
				}
			}
		}
	}
	return false
}

// domain is a claim's pool and its values for the keys of byDomain.
type domain struct {
	pool   *nodepool.State
	values string
}

// domainOf returns oc's domain, the zero domain when oc lacks a label of the keys (it may yet
// settle on any value). The values are written as offering classes are (classKey).
func (r *claimRooms) domainOf(oc *openClaim) domain {
	labels := oc.info.Node().Labels
	for _, keys := range r.by.keys {
		for _, key := range keys {
			if _, ok := labels[key]; !ok {
				return domain{}
			}
		}
	}
	return domain{pool: oc.pool, values: podkeys.ClassKey(labels, r.by.keys...)}
}

// refused records that oc, asked in the pass order is running, refused the pod in every class
// of its offerings (openClaim.placementRefused).
func (r *claimRooms) refused(oc *openClaim) {
	if !r.by.ok || !oc.placementRefused {
		return
	}
	if d := r.domainOf(oc); d.pool != nil {
		if r.refusedIn == nil {
			r.refusedIn = map[domain]bool{}
		}
		r.refusedIn[d] = true
	}
}
