package disruption

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

func TestEmptiness(t *testing.T) {
	cases := []struct {
		name     string
		poolOpts []poolOpt
		// empty nodes, and of them how many have not been consolidatable long enough.
		empty, recent int
		// leaving nodes are already being disrupted and count against the budget.
		leaving int
		want    int
	}{
		{name: "up to the pool's budget", poolOpts: []poolOpt{budget("2")}, empty: 5, want: 2},
		{name: "budget 0", poolOpts: []poolOpt{budget("0")}, empty: 5, want: 0},
		{name: "default budget is 10% rounded up", empty: 5, want: 1},
		{name: "budget larger than the empty nodes", poolOpts: []poolOpt{budget("10")}, empty: 3, want: 3},
		{name: "only consolidatable nodes", poolOpts: []poolOpt{budget("10")}, empty: 3, recent: 1, want: 2},
		{name: "a budget for Empty", poolOpts: []poolOpt{budget("5"), budget("1", karpv1.DisruptionReasonEmpty)}, empty: 3, want: 1},
		{name: "a budget for another reason", poolOpts: []poolOpt{budget("5"), budget("0", karpv1.DisruptionReasonDrifted)}, empty: 3, want: 3},
		{name: "nodes already leaving use the budget", poolOpts: []poolOpt{budget("2")}, empty: 5, leaving: 1, want: 1},
		{name: "WhenEmpty pools remove empty nodes", poolOpts: []poolOpt{whenEmpty(), budget("10")}, empty: 2, want: 2},
		{name: "consolidateAfter Never", poolOpts: []poolOpt{consolidateNever(), budget("10")}, empty: 2, recent: 2, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, newPool("default", tc.poolOpts...))
			for i := range tc.empty {
				var opts []nodeOpt
				if i < tc.recent {
					opts = append(opts, notConsolidatable())
				}
				c.node(fmt.Sprintf("empty-%d", i), "default", odXLarge, opts...)
			}
			for i := range tc.leaving {
				c.node(fmt.Sprintf("leaving-%d", i), "default", odXLarge, nodeTainted(karpv1.DisruptedNoScheduleTaint))
			}
			pl := &countingPlanner{Planner: testPlanner(t)}
			cmd, report := Decide(context.Background(), c.State, pl, nil, decideOpts(15))
			if pl.plans != 0 {
				t.Errorf("the pass ran %d simulations, want none: no node has pods", pl.plans)
			}
			if tc.want == 0 {
				if cmd != nil {
					t.Fatalf("got %s, want no command", describe(cmd))
				}
				return
			}
			if cmd == nil {
				t.Fatalf("no command, want %d empty nodes deleted; report %+v", tc.want, report)
			}
			if cmd.Reason != karpv1.DisruptionReasonEmpty || cmd.Method != "emptiness" || cmd.Decision() != "delete" {
				t.Errorf("got %s, want Empty by emptiness, delete", describe(cmd))
			}
			if len(cmd.Candidates) != tc.want {
				t.Errorf("deletes %v, want %d nodes", cmd.Nodes(), tc.want)
			}
			for _, cand := range cmd.Candidates {
				if len(cand.Pods) > 0 || !cand.Consolidatable() {
					t.Errorf("deletes %s, which has %d pods and consolidatable %v", cand.Node.Name, len(cand.Pods), cand.Consolidatable())
				}
			}
			if want := priceOf(cmd.Candidates); math.Abs(cmd.Savings-want) > 1e-9 || want <= 0 {
				t.Errorf("Savings = %v, want the nodes' price %v", cmd.Savings, want)
			}
			if got := report.Eligible[karpv1.DisruptionReasonEmpty]; got != tc.empty-tc.recent {
				t.Errorf("report: %d eligible for Empty, want %d", got, tc.empty-tc.recent)
			}
		})
	}
}

// wantCommand fails the test unless cmd is a command for reason by method that decides.
func wantCommand(t *testing.T, cmd *Command, reason karpv1.DisruptionReason, method, decision string) {
	t.Helper()
	if cmd == nil {
		t.Fatalf("no command, want %s by %s (%s)", reason, method, decision)
	}
	if cmd.Reason != reason || cmd.Method != method || cmd.Decision() != decision {
		t.Fatalf("got %s, want %s by %s (%s)", describe(cmd), reason, method, decision)
	}
}

// wantCheaper fails the test unless every option of every replacement costs less than the
// candidates together, and Savings is their price less the replacements' cheapest.
func wantCheaper(t *testing.T, cmd *Command) {
	t.Helper()
	price := priceOf(cmd.Candidates)
	for _, r := range cmd.Replacements {
		if len(r.Options) == 0 {
			t.Fatalf("a replacement has no options")
		}
		for _, o := range r.Options {
			if o.Offering.PricePerHour >= price {
				t.Errorf("replacement option %s/%s/%s costs $%.4f/h, the candidates $%.4f/h", o.InstanceType.Name,
					o.Offering.Zone, o.Offering.CapacityType, o.Offering.PricePerHour, price)
			}
		}
	}
	if want := price - replacementPrice(cmd.Replacements); math.Abs(cmd.Savings-want) > 1e-9 || cmd.Savings <= 0 {
		t.Errorf("Savings = %v, want %v > 0", cmd.Savings, want)
	}
}

func TestConsolidation(t *testing.T) {
	// threeUnderused are three nodes of 4 vCPU with a 500m pod each: the pods of all three fit on
	// one of them, or on one smaller node.
	threeUnderused := func(c *cluster) {
		for i := range 3 {
			name := fmt.Sprintf("n%d", i)
			c.node(name, "default", odXLarge)
			c.pod("p"+name, name, "500m", "512Mi")
		}
	}
	// oversized is an 8 vCPU node holding one 100m pod.
	oversized := func(podOpts ...podOpt) func(c *cluster) {
		return func(c *cluster) {
			c.node("big", "default", od2XLarge)
			c.pod("small", "big", "100m", "128Mi", podOpts...)
		}
	}
	cases := []struct {
		name     string
		poolOpts []poolOpt
		setup    func(c *cluster)
		check    func(t *testing.T, c *cluster, cmd *Command)
	}{
		{
			name:     "multi-node: three underused nodes go, at most one cheaper node replaces them",
			poolOpts: []poolOpt{budget("10")},
			setup:    threeUnderused,
			check: func(t *testing.T, _ *cluster, cmd *Command) {
				if cmd == nil {
					t.Fatalf("no command")
				}
				if cmd.Reason != karpv1.DisruptionReasonUnderutilized || cmd.Method != "multi-node consolidation" {
					t.Fatalf("got %s, want Underutilized by multi-node consolidation", describe(cmd))
				}
				if len(cmd.Candidates) < 2 || len(cmd.Replacements) > 1 {
					t.Errorf("got %s, want at least 2 nodes and at most one replacement", describe(cmd))
				}
				wantCheaper(t, cmd)
			},
		},
		{
			name:     "multi-node on demand only: the longest prefix that can go",
			poolOpts: []poolOpt{onDemandOnly(), budget("10")},
			setup:    threeUnderused,
			check: func(t *testing.T, _ *cluster, cmd *Command) {
				wantCommand(t, cmd, karpv1.DisruptionReasonUnderutilized, "multi-node consolidation", "replace")
				if len(cmd.Candidates) != 3 || len(cmd.Replacements) != 1 || len(cmd.Replacements[0].Pods) != 3 {
					t.Errorf("got %s, want the 3 nodes replaced by one node for their 3 pods", describe(cmd))
				}
				for _, o := range cmd.Replacements[0].Options {
					if o.Offering.CapacityType != karpv1.CapacityTypeOnDemand {
						t.Errorf("replacement option %s/%s is not on demand", o.InstanceType.Name, o.Offering.CapacityType)
					}
				}
				wantCheaper(t, cmd)
			},
		},
		{
			name:     "a budget of 1: single-node consolidation deletes one node, its pod fits on another",
			poolOpts: []poolOpt{budget("1")},
			setup:    threeUnderused,
			check: func(t *testing.T, _ *cluster, cmd *Command) {
				wantCommand(t, cmd, karpv1.DisruptionReasonUnderutilized, "single-node consolidation", "delete")
				if len(cmd.Candidates) != 1 {
					t.Errorf("got %s, want one node", describe(cmd))
				}
				wantCheaper(t, cmd)
			},
		},
		{
			name:     "a budget of 0 for Underutilized",
			poolOpts: []poolOpt{budget("5"), budget("0", karpv1.DisruptionReasonUnderutilized)},
			setup:    threeUnderused,
			check:    wantNoCommand,
		},
		{
			name:     "WhenEmpty pools never consolidate underutilized nodes",
			poolOpts: []poolOpt{whenEmpty(), budget("10")},
			setup: func(c *cluster) {
				threeUnderused(c)
				oversized()(c)
			},
			check: wantNoCommand,
		},
		{
			name:     "WhenEmpty pools still remove empty nodes",
			poolOpts: []poolOpt{whenEmpty(), budget("10")},
			setup: func(c *cluster) {
				threeUnderused(c)
				c.node("empty", "default", odXLarge)
			},
			check: func(t *testing.T, _ *cluster, cmd *Command) {
				wantCommand(t, cmd, karpv1.DisruptionReasonEmpty, "emptiness", "delete")
				if strings.Join(cmd.Nodes(), ",") != "empty" {
					t.Errorf("got %s, want only the empty node", describe(cmd))
				}
			},
		},
		{
			name:  "single-node: an oversized node is replaced by a cheaper one",
			setup: oversized(),
			check: func(t *testing.T, c *cluster, cmd *Command) {
				wantCommand(t, cmd, karpv1.DisruptionReasonUnderutilized, "single-node consolidation", "replace")
				if len(cmd.Replacements) != 1 || len(cmd.Replacements[0].Pods) != 1 {
					t.Fatalf("got %s, want one replacement for the pod", describe(cmd))
				}
				wantCheaper(t, cmd)
				// Whatever the cloud launches within the NodeClaim's requirements saves money.
				claim := planner.NewNodeClaim(cmd.Replacements[0])
				for _, o := range launchable(c, claim) {
					if o.PricePerHour >= cmd.Candidates[0].Price {
						t.Errorf("the replacement NodeClaim admits %s/%s/%s at $%.4f/h, the node costs $%.4f/h",
							o.instanceType, o.zone, o.capacityType, o.PricePerHour, cmd.Candidates[0].Price)
					}
				}
			},
		},
		{
			name:  "a pod pinned to its node by hostname keeps the node",
			setup: oversized(pinnedTo("big")),
			check: wantNoCommand,
		},
		{
			name:  "a pod with do-not-disrupt keeps the node",
			setup: oversized(doNotDisruptPod("true")),
			check: wantNoCommand,
		},
		{
			name: "a node whose pods changed recently stays",
			setup: func(c *cluster) {
				c.node("big", "default", od2XLarge, notConsolidatable())
				c.pod("small", "big", "100m", "128Mi")
			},
			check: wantNoCommand,
		},
		{
			name: "a node the catalog cannot price stays",
			setup: func(c *cluster) {
				c.node("big", "default", offering{"m1.retired", fake.ZoneA, karpv1.CapacityTypeOnDemand})
				c.pod("small", "big", "100m", "128Mi")
			},
			check: wantNoCommand,
		},
		{
			name:     "no cheaper node holds the pod",
			poolOpts: []poolOpt{onDemandOnly()},
			setup: func(c *cluster) {
				// t4g.large is the cheapest on-demand type of the catalog, and zone C its cheapest zone.
				c.node("small", "default", offering{"t4g.large", fake.ZoneC, karpv1.CapacityTypeOnDemand})
				c.pod("p", "small", "1500m", "1Gi")
			},
			check: wantNoCommand,
		},
		{
			name: "capacity in flight is no place to move to",
			setup: func(c *cluster) {
				oversized()(c)
				// A node that is Ready but not initialized yet (its startup taints, say): room
				// that may yet fail to come up, where the planner puts the pod first.
				c.node("starting", "default", od2XLarge, uninitialized())
			},
			check: wantNoCommand,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, newPool("default", tc.poolOpts...))
			tc.setup(c)
			cmd, _ := Decide(context.Background(), c.State, testPlanner(t), nil, decideOpts(15))
			tc.check(t, c, cmd)
		})
	}
}

func wantNoCommand(t *testing.T, _ *cluster, cmd *Command) {
	t.Helper()
	if cmd != nil {
		t.Errorf("got %s, want no command", describe(cmd))
	}
}

// catalogOffering is an offering of the cluster's catalog with its instance type's name.
type catalogOffering struct {
	offering
	PricePerHour float64
}

// launchable lists the available catalog offerings a NodeClaim's requirements admit: those the
// cloud may launch for it.
func launchable(c *cluster, claim *karpv1.NodeClaim) []catalogOffering {
	allowed := map[string]map[string]bool{}
	for _, r := range claim.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn {
			allowed[r.Key] = map[string]bool{}
			for _, v := range r.Values {
				allowed[r.Key][v] = true
			}
		}
	}
	admits := func(key, value string) bool { return allowed[key] == nil || allowed[key][value] }
	var out []catalogOffering
	for name, it := range c.types {
		if !admits(corev1.LabelInstanceTypeStable, name) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && admits(corev1.LabelTopologyZone, o.Zone) && admits(karpv1.CapacityTypeLabelKey, o.CapacityType) {
				out = append(out, catalogOffering{offering{name, o.Zone, o.CapacityType}, o.PricePerHour})
			}
		}
	}
	return out
}
