package planner

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/provision/planner/podkeys"
	"github.com/tailor-sh/tailor/pkg/provision/planner/preferences"
)

// PodTopologySpread knows only the domains of the nodes it is shown. Before the first claim of a
// plan settles into a zone, no zone is a domain, so every pod of a zone-spread Deployment would
// pass on the first claim to settle: nothing counts as the emptier zone next door. The zones
// are real all the same: the claims that follow launch there, and the skew shows once they run.
//
// So, when weighing new claims for a pod that spreads (as Karpenter does), the plan also shows
// the plugins one empty node per zone, capacity type and architecture each NodePool may launch
// in, and per value of a custom key the pool leaves to its claims: a domain with no pods, for
// every key the pool's labels give (docs/semantics-domains.md). They are never a place for a
// pod, only something to count. Existing nodes are weighed without them, as the scheduler itself
// sees the cluster; nodes in flight with them, as new capacity, and without them, as the
// scheduler will weigh the pod there.
//
// The scheduler does not count them: it knows the domains of the nodes there are. So the domains
// are a preference, honoured where new capacity can honour them, like those of preferences.go.
// A pod they leave no new capacity is weighed last as the scheduler will weigh it, against the
// nodes there are and the claims of the plan only. Without that, these pods would stay Pending
// for good: replicas that must share a zone (required pod affinity by zone to each
// other) and spread over two zones with maxSkew 1. With a replica in zone a, the empty domain of
// zone b refused them zone a (skew 2) while their affinity refused zone b, though the scheduler,
// with no node in zone b, takes them on any new node in zone a.

// capacityView is one way the planner weighs a pod for new capacity: as, a shape of it (the
// pod itself or a stricter one), step, which names the shape among the pod's (-1: the pod as
// the scheduler sees it), and whether the empty domains count.
type capacityView struct {
	as      *corev1.Pod
	step    int
	domains bool
}

// newCapacityViews returns the views to weigh pod in, strictest first: each shape of its
// preference ladder, with the empty domains when the shape spreads and there are domains; then,
// if the pod itself was weighed with them, the pod without them, as the scheduler sees it.
func newCapacityViews(pod *corev1.Pod, defaultKeys []string, haveDomains bool) []capacityView {
	ladder := preferences.Ladder(pod)
	out := make([]capacityView, 0, len(ladder)+1)
	for step, as := range ladder {
		out = append(out, capacityView{as: as, step: step, domains: haveDomains && podkeys.Spreads(as, defaultKeys)})
	}
	if last := out[len(out)-1]; last.domains {
		out = append(out, capacityView{as: pod, step: -1})
	}
	return out
}

// withoutTheSchedulersView drops the last view of a pod that spreads, the one that weighs it as
// the scheduler does now, without the empty domains. The caller does so while a claim in flight
// may still launch in several domains of a key the pod spreads over (View.Unsettled): the plugins count
// that claim in no domain until it launches, and then in one, so what the scheduler would take
// now it may refuse once that node runs. For example, a Job's pods that must share a zone
// and spread over zones with maxSkew 1, one of them bound in zone c, the only zone with nodes,
// and a claim for other pods in flight, open in three zones. The view without domains counted
// zone c alone and sent the others to new nodes there; the claim launched in zone a, and the
// scheduler refused them. The pod waits instead: the plan after the claim launches weighs it
// with that domain in view. dropped says whether there was such a view to drop.
func withoutTheSchedulersView(views []capacityView) (kept []capacityView, dropped bool) {
	if n := len(views); n > 1 && views[n-1].step == -1 && !views[n-1].domains {
		return views[:n-1], true
	}
	return views, false
}

// waitingForOpenClaims adds to a pod's reasons that it was not weighed as the scheduler sees it
// now (withoutTheSchedulersView), and why.
func waitingForOpenClaims(reasons map[string]string) map[string]string {
	out := make(map[string]string, len(reasons))
	for pool, why := range reasons {
		out[pool] = why + "; a NodeClaim in flight may still launch in a new domain of its topology, so it is weighed again once that claim has launched"
	}
	return out
}
