package disruption

import (
	"context"
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// methodGangDrift is the Method of a command that replaces the nodes of a drifted gang.
const methodGangDrift = "gang drift"

// gangDrift replaces, in one command, every node that runs a pod of a gang (a PodGroup with a
// gang policy) once one of them has drifted: the gang's pods run all together or not at all, so
// replacing its nodes one by one would evict part of it and leave the rest waiting for the
// scheduler to bind a whole gang again. The command launches replacements for all of the gang's
// pods, waits until every replacement is up, and only then drains the nodes, all together (as
// every command does). Nodes that run pods of several gangs join those gangs' nodes into one
// group. A group is taken only if each of its nodes is otherwise a candidate, the drift budgets
// of its pools allow all of its nodes at once, and its pods fit on the other nodes and the
// replacements. Consolidation never takes a gang's node: moving a running gang costs it a
// restart, which a saving does not justify.
func (d *decider) gangDrift(ctx context.Context) *Command {
	if len(d.state.Gangs) == 0 {
		return nil
	}
	cands, _ := candidates(d.state, d.closed, true)
	for _, group := range gangGroups(d.state, cands) {
		per := map[string]int{}
		for _, c := range group {
			per[c.Pool.Name]++
		}
		allowed := true
		for pool, n := range per {
			if d.budgets.left(pool, karpv1.DisruptionReasonDrifted) < n {
				allowed = false
			}
		}
		if !allowed {
			continue
		}
		out := d.probe.simulate(ctx, group)
		if !out.OK() {
			continue
		}
		return &Command{Reason: karpv1.DisruptionReasonDrifted, Method: methodGangDrift, Candidates: group,
			Replacements: out.Replacements, Savings: priceOf(group) - replacementPrice(out.Replacements)}
	}
	return nil
}

// gangGroups are the groups of candidates that must go together for gang drift: each is every
// node that runs a pod of some gangs, closed over the gangs of those nodes' pods, with at least
// one drifted node. A group one of whose nodes is no candidate (cands are those of gangsMove) is
// left out: none of it goes. Groups come drifted longest first, each sorted by node name.
func gangGroups(s *State, cands []*Candidate) [][]*Candidate {
	runsOn := map[string][]string{}
	for node, pods := range s.podsByNode(nil) {
		for _, p := range pods {
			if g := gangOf(p); s.Gangs[g] && !slices.Contains(runsOn[g], node) {
				runsOn[g] = append(runsOn[g], node)
			}
		}
	}
	byName := make(map[string]*Candidate, len(cands))
	for _, c := range cands {
		byName[c.Node.Name] = c
	}
	var groups [][]*Candidate
	seen := map[string]bool{}
	for _, c := range cands {
		if !c.Drifted() || len(c.Gangs) == 0 || seen[c.Node.Name] {
			continue
		}
		group, whole := closure(c, runsOn, byName)
		for _, m := range group {
			seen[m.Node.Name] = true
		}
		if whole {
			groups = append(groups, group)
		}
	}
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := driftedSince(groups[i]), driftedSince(groups[j])
		return a.Before(&b)
	})
	return groups
}

// closure is the candidates that run a pod of c's gangs, of their gangs, and so on; false when
// one of those nodes is no candidate.
func closure(c *Candidate, runsOn map[string][]string, byName map[string]*Candidate) ([]*Candidate, bool) {
	in := map[string]*Candidate{c.Node.Name: c}
	todo := slices.Clone(c.Gangs)
	done := map[string]bool{}
	whole := true
	for len(todo) > 0 {
		g := todo[0]
		todo = todo[1:]
		if done[g] {
			continue
		}
		done[g] = true
		for _, node := range runsOn[g] {
			m := byName[node]
			switch {
			case m == nil:
				whole = false
			case in[node] == nil:
				in[node] = m
				todo = append(todo, m.Gangs...)
			}
		}
	}
	out := make([]*Candidate, 0, len(in))
	for _, m := range in {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node.Name < out[j].Node.Name })
	return out, whole
}

// driftedSince is when the group's first node drifted.
func driftedSince(group []*Candidate) (t metav1.Time) {
	for _, c := range group {
		if cond := c.Claim.GetCondition(karpv1.ConditionTypeDrifted); c.Drifted() && cond != nil {
			if t.IsZero() || cond.LastTransitionTime.Before(&t) {
				t = cond.LastTransitionTime
			}
		}
	}
	return t
}

// sameGroup says why the gang drift command's nodes are no longer the group to replace
// together, or "": its gangs now run on other nodes too, one of its nodes is no candidate any
// more, or none is drifted.
func sameGroup(s *State, cmd []*Candidate, fresh []*Candidate) string {
	want := map[string]bool{}
	for _, c := range cmd {
		want[c.Node.Name] = true
	}
	for _, group := range gangGroups(s, fresh) {
		if !slices.ContainsFunc(group, func(c *Candidate) bool { return want[c.Node.Name] }) {
			continue
		}
		if len(group) != len(want) {
			return fmt.Sprintf("the gangs of nodes %v now run on %d nodes", cmdNodes(cmd), len(group))
		}
		for _, c := range group {
			if !want[c.Node.Name] {
				return fmt.Sprintf("the gangs of nodes %v now run on node %s too", cmdNodes(cmd), c.Node.Name)
			}
		}
		return ""
	}
	return fmt.Sprintf("the gangs of nodes %v are no longer a group that drift can replace whole", cmdNodes(cmd))
}

func cmdNodes(cands []*Candidate) []string {
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.Node.Name
	}
	return out
}
