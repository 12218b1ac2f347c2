package disruption

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

func TestCommandString(t *testing.T) {
	cand := func(instanceType string) *Candidate {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-of-" + instanceType, Labels: map[string]string{}}}
		if instanceType != "" {
			n.Labels[corev1.LabelInstanceTypeStable] = instanceType
		} else {
			n.Name = "unlabeled"
		}
		return &Candidate{Node: n, Claim: &karpv1.NodeClaim{}}
	}
	driftedCand := func(instanceType, reason string) *Candidate {
		c := cand(instanceType)
		c.Claim.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, reason, "", testNow)
		return c
	}
	replacement := func(instanceType string) *planner.PlannedClaim {
		return &planner.PlannedClaim{Options: []planner.Option{{InstanceType: &cloud.InstanceType{Name: instanceType}}}}
	}
	cases := []struct {
		name string
		cmd  Command
		want string
	}{
		{
			name: "replace",
			cmd: Command{Reason: karpv1.DisruptionReasonUnderutilized, Candidates: []*Candidate{cand("m6i.2xlarge")},
				Replacements: []*planner.PlannedClaim{replacement("c7g.large")}, Savings: 0.123},
			want: "Disrupting: Underutilized, replacing m6i.2xlarge with c7g.large, saves $0.12/h",
		},
		{
			name: "delete one",
			cmd:  Command{Reason: karpv1.DisruptionReasonUnderutilized, Candidates: []*Candidate{cand("m6i.large")}, Savings: 0.0968},
			want: "Disrupting: Underutilized, deleting m6i.large, saves $0.10/h",
		},
		{
			name: "delete several",
			cmd:  Command{Reason: karpv1.DisruptionReasonEmpty, Candidates: []*Candidate{cand("m6i.large"), cand("m6i.xlarge")}, Savings: 0.29},
			want: "Disrupting: Empty, deleting 2 nodes (m6i.large, m6i.xlarge), saves $0.29/h",
		},
		{
			name: "more than three nodes",
			cmd: Command{Reason: karpv1.DisruptionReasonUnderutilized,
				Candidates:   []*Candidate{cand("a.large"), cand("b.large"), cand("c.large"), cand("d.large")},
				Replacements: []*planner.PlannedClaim{replacement("m7g.xlarge")}, Savings: 0.4},
			want: "Disrupting: Underutilized, replacing 4 nodes (a.large, b.large, c.large, ...) with m7g.xlarge, saves $0.40/h",
		},
		{
			name: "a node without an instance type is named",
			cmd:  Command{Reason: karpv1.DisruptionReasonEmpty, Candidates: []*Candidate{cand("")}},
			want: "Disrupting: Empty, deleting unlabeled, saves $0.00/h",
		},
		{
			name: "drift says why and what it costs",
			cmd: Command{Reason: karpv1.DisruptionReasonDrifted, Candidates: []*Candidate{driftedCand("m5.xlarge", "NodePoolDrifted")},
				Replacements: []*planner.PlannedClaim{replacement("m7i.xlarge")}, Savings: -0.0124},
			want: "Disrupting: Drifted (NodePoolDrifted), replacing m5.xlarge with m7i.xlarge, costs $0.01/h more",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cmd.String(); got != tc.want {
				t.Errorf("String() =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

func TestCheaper(t *testing.T) {
	// A small catalog: type c is cheapest, then a, b and d; spot is cheaper than on demand and
	// differs by zone.
	prices := map[string][4]float64{ // z1 spot, z2 spot, z1 on demand, z2 on demand
		"a": {0.10, 0.12, 0.30, 0.30},
		"b": {0.20, 0.26, 0.50, 0.50},
		"c": {0.05, 0.06, 0.15, 0.15},
		"d": {0.35, 0.45, 0.90, 0.90},
	}
	var options []planner.Option
	for name, p := range prices {
		it := &cloud.InstanceType{Name: name}
		for i, o := range []cloud.Offering{
			{Zone: "z1", CapacityType: karpv1.CapacityTypeSpot}, {Zone: "z2", CapacityType: karpv1.CapacityTypeSpot},
			{Zone: "z1", CapacityType: karpv1.CapacityTypeOnDemand}, {Zone: "z2", CapacityType: karpv1.CapacityTypeOnDemand},
		} {
			o.PricePerHour, o.Available = p[i], true
			it.Offerings = append(it.Offerings, o)
		}
		for _, o := range it.Offerings {
			options = append(options, planner.Option{InstanceType: it, Offering: o})
		}
	}
	// Cheapest first, as the planner orders a claim's options.
	sort.SliceStable(options, func(i, j int) bool {
		a, b := options[i], options[j]
		if a.Offering.PricePerHour != b.Offering.PricePerHour {
			return a.Offering.PricePerHour < b.Offering.PricePerHour
		}
		return key(a) < key(b)
	})
	cases := []struct {
		name    string
		than    float64
		spot    bool
		spotMin int
		// want are the options kept, cheapest first; nil means no replacement.
		want []string
	}{
		{name: "on demand: every type whose offerings within the claim cost less", than: 0.40,
			// b and d have cheaper spot offerings, but the claim would also admit their on-demand ones.
			want: []string{"c/z1/spot", "c/z2/spot", "a/z1/spot", "a/z2/spot", "c/z1/on-demand", "c/z2/on-demand", "a/z1/on-demand", "a/z2/on-demand"}},
		{name: "on demand, only spot is cheaper", than: 0.14,
			want: []string{"c/z1/spot", "c/z2/spot", "a/z1/spot", "a/z2/spot"}},
		{name: "on demand, everything is cheaper", than: 1, want: keys(options)},
		{name: "nothing is cheaper", than: 0.05},
		{name: "the same price is not cheaper", than: 0.06, want: []string{"c/z1/spot"}},
		{name: "spot: only spot offerings", than: 0.30, spot: true, spotMin: 3,
			want: []string{"c/z1/spot", "c/z2/spot", "a/z1/spot", "a/z2/spot", "b/z1/spot", "b/z2/spot"}},
		{name: "spot: the spotMin cheapest types", than: 0.30, spot: true, spotMin: 2,
			want: []string{"c/z1/spot", "c/z2/spot", "a/z1/spot", "a/z2/spot"}},
		{name: "spot: fewer cheaper types than spotMin", than: 0.30, spot: true, spotMin: 4},
		{name: "spot: a type dearer in another zone of the claim does not count", than: 0.25, spot: true, spotMin: 3},
		{name: "spot: without the dear type", than: 0.25, spot: true, spotMin: 2,
			want: []string{"c/z1/spot", "c/z2/spot", "a/z1/spot", "a/z2/spot"}},
		{name: "spot: more types than the catalog has", than: 1, spot: true, spotMin: 15},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &planner.PlannedClaim{NodePool: newPool("default"), Options: append([]planner.Option(nil), options...)}
			got, ok := cheaper(r, tc.than, tc.spot, tc.spotMin)
			if len(r.Options) != len(options) {
				t.Errorf("cheaper changed the planned claim's options")
			}
			if tc.want == nil {
				if ok {
					t.Fatalf("cheaper = %v, want no replacement", keys(got.Options))
				}
				return
			}
			if !ok {
				t.Fatalf("cheaper found no replacement, want %v", tc.want)
			}
			if strings.Join(keys(got.Options), " ") != strings.Join(tc.want, " ") {
				t.Errorf("cheaper kept\n  %v\nwant\n  %v", keys(got.Options), tc.want)
			}
			if got.NodePool != r.NodePool {
				t.Errorf("cheaper lost the NodePool")
			}
			// Whatever the NodeClaim admits costs less.
			for _, it := range typesOf(got.Options) {
				for _, o := range it.Offerings {
					if admitted(got.Options, it.Name, o) && o.PricePerHour >= tc.than {
						t.Errorf("the replacement admits %s/%s/%s at %v, not cheaper than %v", it.Name, o.Zone, o.CapacityType, o.PricePerHour, tc.than)
					}
				}
			}
		})
	}
}

func key(o planner.Option) string {
	return fmt.Sprintf("%s/%s/%s", o.InstanceType.Name, o.Offering.Zone, o.Offering.CapacityType)
}

func keys(options []planner.Option) []string {
	out := make([]string, len(options))
	for i, o := range options {
		out[i] = key(o)
	}
	return out
}

func typesOf(options []planner.Option) []*cloud.InstanceType {
	seen := map[string]bool{}
	var out []*cloud.InstanceType
	for _, o := range options {
		if !seen[o.InstanceType.Name] {
			seen[o.InstanceType.Name] = true
			out = append(out, o.InstanceType)
		}
	}
	return out
}

// admitted reports whether a NodeClaim made from options (see planner.NewNodeClaim: types,
// zones and capacity types listed apart) lets the cloud launch offering o of type name.
func admitted(options []planner.Option, name string, o cloud.Offering) bool {
	var typeOK, zoneOK, ctOK bool
	for _, opt := range options {
		typeOK = typeOK || opt.InstanceType.Name == name
		zoneOK = zoneOK || opt.Offering.Zone == o.Zone
		ctOK = ctOK || opt.Offering.CapacityType == o.CapacityType
	}
	return typeOK && zoneOK && ctOK
}
