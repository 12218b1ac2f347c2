package planner

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// A claim whose pods read no zone may launch in any zone its offerings span, and the plan used to
// show it to the plugins without a zone label, so PodTopologySpread counted it in no zone. The
// cloud puts it in one, and a zone with no node until then is a new domain for every pod that
// spreads over zones, empty of their pods, which can make the skew of the pods already placed too
// large. So
// when pods of the plan spread over a key (DoNotSchedule), each claim still open on that key is
// settled before the plan is weighed as a whole (besideThePlan): into a domain that exists
// already (a node or another claim there) when one of its offerings is in one, since that adds no
// domain; else into its cheapest offering's. A claim whose minValues need the offerings of
// several domains is left open.

// spreadKeysOf returns the keys, hostname aside, that the claims' pods spread over with
// DoNotSchedule, the profile's default keys for pods without constraints of their own.
func spreadKeysOf(claims []*openClaim, defaultKeys []string) []string {
	var pods []*corev1.Pod
	for _, oc := range claims {
		pods = append(pods, oc.pods...)
	}
	return podkeys.SpreadKeysOfPods(pods, defaultKeys)
}

// domainsOf returns, per key, the values the snapshot's nodes and the claims' nodes carry.
func domainsOf(snapshot *simulation.Snapshot, claims []*openClaim, keys []string) map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = map[string]bool{}
	}
	note := func(n *corev1.Node) {
		for _, k := range keys {
			if v, ok := n.Labels[k]; ok {
				out[k][v] = true
			}
		}
	}
	if len(keys) == 0 {
		return out
	}
	nodes, _ := snapshot.NodeInfos().List()
	for _, ni := range nodes {
		note(ni.Node())
	}
	for _, oc := range claims {
		note(oc.info.Node())
	}
	return out
}

// settleFor narrows the claim's offerings to one value of each key of keys its node has no label
// for, and adds it to domains. The claim's node then shows its cheapest offering, the one the
// cloud is asked for first: the plan's node for a claim keeps only the labels its offerings agree
// on, and a pod that requires one of several zones would find none on it (every pod of the claim
// passed on each of its offerings as that offering's node).
func (oc *openClaim) settleFor(offerings []int, keys []string, domains map[string]map[string]bool) []int {
	compatible := oc.pool.Compatible
	node := oc.info.Node()
	for _, key := range keys {
		if _, ok := node.Labels[key]; ok || len(offerings) == 0 {
			continue
		}
		value, ok := "", false
		for _, i := range offerings {
			if v, has := compatible[i].Labels[key]; has && (!ok || domains[key][v] && !domains[key][value]) {
				value, ok = v, true
			}
		}
		if !ok {
			continue
		}
		narrowed := nodepool.Expressible(oc.pool, slices.DeleteFunc(slices.Clone(offerings), func(i int) bool { return compatible[i].Labels[key] != value }))
		if len(narrowed) == 0 || oc.pool.MinValuesShort(narrowed) != "" && oc.pool.MinValuesShort(offerings) == "" {
			continue
		}
		offerings = narrowed
		domains[key][value] = true
	}
	if len(offerings) > 0 {
		oc.info.SetNode(compatible[offerings[0]].TemplateNode(oc.name, oc.chosen))
	}
	return offerings
}

// onItsNode is a pending pod the plan left on a node of the snapshot (one in flight).
type onItsNode struct {
	pod  *corev1.Pod
	node fwk.NodeInfo
}

// countedInFlight returns the pods counted (not bound) on the nodes in flight.
func countedInFlight(nodes []fwk.NodeInfo, inFlight map[string]string, counted map[types.UID]bool) []onItsNode {
	var out []onItsNode
	if len(inFlight) == 0 || len(counted) == 0 {
		// Nothing to find: no walk over a fleet of thousands.
		return nil
	}
	for _, ni := range nodes {
		if _, ok := inFlight[ni.Node().Name]; !ok {
			continue
		}
		for _, pi := range ni.GetPods() {
			if p := pi.GetPod(); counted[p.UID] {
				out = append(out, onItsNode{pod: p, node: ni})
			}
		}
	}
	return out
}

// sparingTheLaunching returns the claims of the plan to hold back, with why: those that would add
// a domain to a spread of a pod on its way to capacity already launching (an earlier plan's),
// where the scheduler would refuse that pod beside them. For example, replicas that must
// share a zone and spread over zones (maxSkew 1) went, by one plan, to eight claims in zone b,
// the only zone with nodes; the next plan launched a node in zone c for pods that need zone c,
// and the replicas that had not bound yet were refused on their new nodes. The held claims' pods
// are planned again once those pods have bound, their nodes have come up, or their hold has
// lapsed (Input.Spared: LaunchHold bounds the wait). Left alone: between a node's coming up and
// its pods' binding, a new domain can still break them; and the claims held are all those that
// add a domain to the pod's spread, the scheduler's count of domains (nodes that match the pod's
// node affinity) aside.
func (pl *Planner) sparingTheLaunching(ctx context.Context, snapshot *simulation.Snapshot, claims []*openClaim, launching []onItsNode, refused map[types.UID]Unplaceable, defaultKeys []string, specs map[*corev1.Pod]string) map[*openClaim]string {
	var kept []*openClaim
	for _, oc := range claims {
		for _, p := range oc.pods {
			if _, gone := refused[p.UID]; !gone {
				kept = append(kept, oc)
				break
			}
		}
	}
	if len(kept) == 0 || len(launching) == 0 {
		return nil
	}
	b := newBeside(ctx, pl, snapshot, false)
	b.show(kept)
	held := map[*openClaim]string{}
	for _, l := range launching {
		if !podkeys.Spreads(l.pod, defaultKeys) {
			continue
		}
		// The node as the snapshot holds it now, with what the plan added to it.
		if ni, err := snapshot.NodeInfos().Get(l.node.Node().Name); err == nil {
			l.node = ni
		}
		why := b.refusedAt(ctx, l.node, l.pod, specs[l.pod])
		if why == "" {
			continue
		}
		keys := podkeys.SpreadKeysOfPods([]*corev1.Pod{l.pod}, defaultKeys)
		existing := domainsOf(snapshot, nil, keys)
		adding := map[*openClaim]string{}
		for _, oc := range kept {
			for _, k := range keys {
				if v, ok := oc.info.Node().Labels[k]; ok && !existing[k][v] {
					adding[oc] = k + "=" + v
				}
			}
		}
		if len(adding) == 0 {
			continue
		}
		// Only when those claims are the cause: without them the pod passes.
		b.show(slices.DeleteFunc(slices.Clone(kept), func(oc *openClaim) bool { _, ok := adding[oc]; return ok }))
		if b.refusedAt(ctx, l.node, l.pod, specs[l.pod]) == "" {
			for oc, domain := range adding {
				held[oc] = fmt.Sprintf("its node would be the first in %s, where pod %s/%s, on its way to node %s launching for it, "+
					"would then be refused (%s); it is planned again once that pod has bound", domain, l.pod.Namespace, l.pod.Name, l.node.Node().Name, why)
			}
			kept = slices.DeleteFunc(kept, func(oc *openClaim) bool { _, ok := adding[oc]; return ok })
		}
		b.show(kept)
	}
	return held
}
