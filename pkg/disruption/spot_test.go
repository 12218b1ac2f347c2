package disruption

import (
	"context"
	"testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// A spot node is replaced by single-node consolidation only when cheaper spot offerings span at
// least SpotToSpotMin instance types, and then by a claim over the SpotToSpotMin cheapest.
func TestSpotToSpot(t *testing.T) {
	ctx := context.Background()
	spot := func(instanceType string) offering { return offering{instanceType, fake.ZoneA, karpv1.CapacityTypeSpot} }
	cases := []struct {
		name string
		node offering
		cpu  string
		// spotMin is SpotToSpotMin given how many instance types offer spot cheaper than the
		// node among the options the planner found (cheaper never keeps more).
		spotMin func(t *testing.T, cheaperTypes int) int
		want    bool
	}{
		{name: "fewer cheaper types than SpotToSpotMin", node: spot("c7i.large"), cpu: "1",
			spotMin: func(t *testing.T, n int) int {
				if n == 0 || n >= 15 {
					t.Fatalf("%d types offer spot below the node; the case needs 1 to 14", n)
				}
				return 15
			}},
		{name: "one cheaper type short of SpotToSpotMin", node: spot("m6i.2xlarge"), cpu: "100m",
			spotMin: func(_ *testing.T, n int) int { return n + 1 }},
		{name: "SpotToSpotMin 15", node: spot("m6i.2xlarge"), cpu: "100m",
			spotMin: func(t *testing.T, n int) int {
				if n < 15 {
					t.Fatalf("only %d types offer spot below the node; the case needs 15", n)
				}
				return 15
			}, want: true},
		{name: "SpotToSpotMin 3", node: spot("m6i.2xlarge"), cpu: "100m",
			spotMin: func(*testing.T, int) int { return 3 }, want: true},
		{name: "SpotToSpotMin 1", node: spot("m6i.2xlarge"), cpu: "100m",
			spotMin: func(*testing.T, int) int { return 1 }, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, newPool("default"))
			c.node("spot", "default", tc.node)
			c.pod("p", "spot", tc.cpu, "128Mi")
			pl := testPlanner(t)
			cand := candidate(t, c.State, "spot")
			out := simulate(ctx, pl, c.State, []*Candidate{cand})
			if !out.OK() || len(out.Replacements) != 1 {
				t.Fatalf("removing the spot node: %+v, want one replacement", out)
			}
			types := map[string]bool{}
			for _, o := range out.Replacements[0].Options {
				if o.Offering.CapacityType == karpv1.CapacityTypeSpot && o.Offering.PricePerHour < cand.Price {
					types[o.InstanceType.Name] = true
				}
			}
			spotMin := tc.spotMin(t, len(types))
			t.Logf("%d instance types offer spot below the node's $%.4f/h; SpotToSpotMin %d", len(types), cand.Price, spotMin)

			cmd, _ := Decide(ctx, c.State, pl, nil, decideOpts(spotMin))
			if !tc.want {
				if cmd != nil {
					t.Fatalf("got %s, want no command", describe(cmd))
				}
				return
			}
			wantCommand(t, cmd, karpv1.DisruptionReasonUnderutilized, "single-node consolidation", "replace")
			wantCheaper(t, cmd)
			kept := map[string]bool{}
			for _, o := range cmd.Replacements[0].Options {
				kept[o.InstanceType.Name] = true
				if o.Offering.CapacityType != karpv1.CapacityTypeSpot {
					t.Errorf("spot node replaced with option %s/%s/%s", o.InstanceType.Name, o.Offering.Zone, o.Offering.CapacityType)
				}
			}
			if len(kept) > spotMin {
				t.Errorf("replacement spans %d instance types, want at most %d", len(kept), spotMin)
			}
		})
	}
}
