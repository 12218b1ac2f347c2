package planner

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Gang is a PodGroup with a gang policy: the scheduler binds its pods only once MinCount of them
// have a place at the same time (the GangScheduling plugin's Permit), so capacity for fewer than
// MinCount is capacity no pod of it will use.
type Gang struct {
	Namespace, Name string
	MinCount        int
}

func (g Gang) String() string { return g.Namespace + "/" + g.Name }

// GangOf says which gang a pod belongs to; false for a pod of no gang, of a PodGroup with
// another policy, or of one that does not exist (yet).
type GangOf func(pod *corev1.Pod) (Gang, bool)

// ShortGang is a gang that a plan places fewer than MinCount pods of.
type ShortGang struct {
	Gang Gang
	// Placed counts the gang's pods placed: already on nodes or capacity in flight, or by the
	// plan. Pods are the gang's pending pods, which the plan must not place.
	Placed int
	Pods   []*corev1.Pod
}

// Reason says why the gang's pods were not planned, for their FailedProvisioning Event.
func (s ShortGang) Reason() string {
	return fmt.Sprintf("PodGroup %s needs at least %d pods placed together (minCount); only %d fit, so nothing is launched for it",
		s.Gang, s.Gang.MinCount, s.Placed)
}

// ShortGangs returns the gangs of the pending pods that the plan cannot complete: counting their
// pods already placed (in.Pods, on nodes or capacity in flight) and those the plan places, fewer
// than MinCount. Their pods must be planned again without: the plan's claims for them would
// launch nodes that no pod of theirs will ever bind to. Ordered by gang, for stable Events.
func ShortGangs(in Input, plan *Plan, gangOf GangOf) []ShortGang {
	if gangOf == nil {
		return nil
	}
	pending := map[Gang][]*corev1.Pod{}
	for _, pod := range in.Pending {
		if g, ok := gangOf(pod); ok {
			pending[g] = append(pending[g], pod)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	placed := map[Gang]int{}
	count := func(pod *corev1.Pod) {
		if g, ok := gangOf(pod); ok {
			if _, planned := pending[g]; planned {
				placed[g]++
			}
		}
	}
	seen := map[types.UID]bool{}
	for _, pod := range in.Pods {
		if !seen[pod.UID] {
			seen[pod.UID] = true
			count(pod)
		}
	}
	for _, pod := range plannedPods(plan) {
		if !seen[pod.UID] {
			seen[pod.UID] = true
			count(pod)
		}
	}
	var out []ShortGang
	for g, pods := range pending {
		if placed[g] < g.MinCount {
			out = append(out, ShortGang{Gang: g, Placed: placed[g], Pods: pods})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gang.String() < out[j].Gang.String() })
	return out
}

// plannedPods are the pending pods the plan placed: on nodes that exist, on capacity in flight,
// or on the claims it opens.
func plannedPods(plan *Plan) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), plan.FitsExisting...)
	for _, pods := range plan.InFlight {
		out = append(out, pods...)
	}
	for _, c := range plan.Claims {
		out = append(out, c.Pods...)
	}
	return out
}
