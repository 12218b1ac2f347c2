package disruption

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

func TestDrift(t *testing.T) {
	early, late := testNow.Add(-3*time.Hour), testNow.Add(-time.Hour)
	cases := []struct {
		name     string
		poolOpts []poolOpt
		setup    func(c *cluster)
		// want is the node replaced, "" for none; decision is checked when set.
		want     string
		decision string
	}{
		{
			name:     "a drifted node is replaced even when consolidation is off",
			poolOpts: []poolOpt{consolidateNever(), budget("1", karpv1.DisruptionReasonDrifted)},
			setup: func(c *cluster) {
				c.node("old", "default", odXLarge, notConsolidatable(), drifted(early))
				c.pod("p", "old", "500m", "512Mi")
			},
			want: "old", decision: "replace",
		},
		{
			name:     "a budget of 0 for Drifted",
			poolOpts: []poolOpt{consolidateNever(), budget("5"), budget("0", karpv1.DisruptionReasonDrifted)},
			setup: func(c *cluster) {
				c.node("old", "default", odXLarge, notConsolidatable(), drifted(early))
				c.pod("p", "old", "500m", "512Mi")
			},
		},
		{
			name:     "a budget of 0 for another reason",
			poolOpts: []poolOpt{consolidateNever(), budget("0", karpv1.DisruptionReasonUnderutilized)},
			setup: func(c *cluster) {
				c.node("old", "default", odXLarge, notConsolidatable(), drifted(early))
				c.pod("p", "old", "500m", "512Mi")
			},
			want: "old", decision: "replace",
		},
		{
			name:     "an empty drifted node goes first, without a replacement",
			poolOpts: []poolOpt{consolidateNever()},
			setup: func(c *cluster) {
				c.node("busy", "default", odXLarge, notConsolidatable(), drifted(early))
				c.pod("p", "busy", "500m", "512Mi")
				c.node("empty", "default", odXLarge, notConsolidatable(), drifted(late))
			},
			want: "empty", decision: "delete",
		},
		{
			name:     "the node drifted longest goes first",
			poolOpts: []poolOpt{consolidateNever()},
			setup: func(c *cluster) {
				c.node("a-late", "default", odXLarge, notConsolidatable(), drifted(late))
				c.pod("p1", "a-late", "500m", "512Mi")
				c.node("b-early", "default", odXLarge, notConsolidatable(), drifted(early))
				c.pod("p2", "b-early", "500m", "512Mi")
			},
			want: "b-early",
		},
		{
			name:     "a drifted node whose pod fits nowhere else is skipped",
			poolOpts: []poolOpt{consolidateNever()},
			setup: func(c *cluster) {
				c.node("a-pinned", "default", odXLarge, notConsolidatable(), drifted(early))
				c.pod("p1", "a-pinned", "500m", "512Mi", pinnedTo("a-pinned"))
				c.node("b-free", "default", odXLarge, notConsolidatable(), drifted(late))
				c.pod("p2", "b-free", "500m", "512Mi")
			},
			want: "b-free",
		},
		{
			name:     "a drifted node with do-not-disrupt stays",
			poolOpts: []poolOpt{consolidateNever()},
			setup: func(c *cluster) {
				c.node("old", "default", odXLarge, notConsolidatable(), drifted(early), nodeAnnotated(karpv1.DoNotDisruptAnnotationKey, "true"))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, newPool("default", tc.poolOpts...))
			tc.setup(c)
			cmd, report := Decide(context.Background(), c.State, testPlanner(t), nil, decideOpts(15))
			if tc.want == "" {
				if cmd != nil {
					t.Fatalf("got %s, want no command", describe(cmd))
				}
				return
			}
			decision := tc.decision
			if decision == "" && cmd != nil {
				decision = cmd.Decision()
			}
			wantCommand(t, cmd, karpv1.DisruptionReasonDrifted, "drift", decision)
			if got := strings.Join(cmd.Nodes(), ","); got != tc.want {
				t.Errorf("replaces %s, want %s", got, tc.want)
			}
			if len(cmd.Replacements) > 0 && len(cmd.Replacements[0].Pods) != len(cmd.Candidates[0].Pods) {
				t.Errorf("replacement holds %d pods, want the node's %d", len(cmd.Replacements[0].Pods), len(cmd.Candidates[0].Pods))
			}
			if want := priceOf(cmd.Candidates) - replacementPrice(cmd.Replacements); math.Abs(cmd.Savings-want) > 1e-9 {
				t.Errorf("Savings = %v, want %v", cmd.Savings, want)
			}
			if !strings.HasPrefix(cmd.String(), "Disrupting: Drifted (NodePoolDrifted), ") {
				t.Errorf("String() = %q, want it to start with the reason and the drift's", cmd.String())
			}
			if report.Eligible[karpv1.DisruptionReasonDrifted] == 0 {
				t.Errorf("report counts no node eligible for Drifted: %+v", report.Eligible)
			}
		})
	}
}

// simulate asks about the State without changing it, and says which pod fits nowhere.
func TestSimulate(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, newPool("default"))
	c.node("a", "default", odXLarge)
	c.pod("free", "a", "500m", "512Mi")
	c.node("b", "default", odXLarge)
	c.pod("pinned", "b", "500m", "512Mi", pinnedTo("b"))
	pl := testPlanner(t)

	out := simulate(ctx, pl, c.State, []*Candidate{candidate(t, c.State, "a")})
	if !out.OK() || len(out.Replacements) != 0 {
		t.Errorf("removing a: %+v, want its pod to fit on b", out)
	}
	out = simulate(ctx, pl, c.State, []*Candidate{candidate(t, c.State, "b")})
	if out.OK() || !strings.Contains(out.Unplaceable, "pod default/pinned would fit nowhere") {
		t.Errorf("removing b: %+v, want the pinned pod unplaceable", out)
	}
	for _, p := range c.Pods {
		if p.Spec.NodeName == "" {
			t.Errorf("simulate unbound pod %s in the State", p.Name)
		}
	}
	for _, n := range c.Nodes {
		if n.Labels[corev1.LabelHostname] == "" || len(n.Spec.Taints) > 0 {
			t.Errorf("simulate changed node %s in the State: %v, %v", n.Name, n.Labels, n.Spec.Taints)
		}
	}
}

// The eligible-nodes gauges fall to 0 when the last node eligible for a reason goes: decide
// publishes every reason, not only those it counted this pass.
func TestEligibleGaugeFallsToZero(t *testing.T) {
	ctx := context.Background()
	ctrl := &Controller{opts: Options{Planner: testPlanner(t), Gate: noneClosed{}, Clock: clock.RealClock{}}}
	c := newCluster(t, newPool("default", consolidateNever()))
	c.node("old", "default", odXLarge, notConsolidatable(), drifted(testNow.Add(-time.Hour)))
	ctrl.decide(ctx, c.State)
	gauge := metrics.DisruptionEligibleNodes.WithLabelValues(string(karpv1.DisruptionReasonDrifted))
	if got := testutil.ToFloat64(gauge); got != 1 {
		t.Fatalf("eligible for Drifted with one drifted node: %v, want 1", got)
	}
	ctrl.decide(ctx, newCluster(t, newPool("default", consolidateNever())).State)
	if got := testutil.ToFloat64(gauge); got != 0 {
		t.Errorf("eligible for Drifted once the drifted node is gone: %v, want 0", got)
	}
}
