package planner

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/nodepool/hash"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

func requirementValues(claim *karpv1.NodeClaim, key string) ([]string, bool) {
	var values []string
	found := false
	for _, r := range claim.Spec.Requirements {
		if r.Key != key || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		if !found {
			values, found = r.Values, true
			continue
		}
		// Requirements on one key all hold: the values are those every one of them allows.
		values = slices.DeleteFunc(slices.Clone(values), func(v string) bool { return !slices.Contains(r.Values, v) })
	}
	return values, found
}

func TestNewNodeClaim(t *testing.T) {
	const team = "example.com/team"
	pool := newPool("general",
		requirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m"),
		requirement(team, corev1.NodeSelectorOpIn, "payments"),
		taint("example.com/dedicated"))
	pool.NodePool.Spec.Template.Labels = map[string]string{"env": "prod"}
	cases := []struct {
		name    string
		pending []*corev1.Pod
		// zones and capacityTypes are what the claim must narrow to.
		zones, capacityTypes []string
	}{
		{name: "small pods: many types, capped", pending: pods(3, "500m", "512Mi"),
			zones: fake.Zones(), capacityTypes: []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}},
		{name: "zone and capacity type pinned", pending: []*corev1.Pod{
			newPod("a", "2", "4Gi", nodeSelector(corev1.LabelTopologyZone, fake.ZoneC), nodeSelector(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot)),
			newPod("b", "1", "1Gi", nodeSelector(corev1.LabelTopologyZone, fake.ZoneC)),
		}, zones: []string{fake.ZoneC}, capacityTypes: []string{karpv1.CapacityTypeSpot}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.pending {
				tolerates("example.com/dedicated")(p)
			}
			plan := testPlanner(t).Plan(context.Background(), Input{Pending: tc.pending, Pools: []Pool{pool}})
			if len(plan.Claims) != 1 || len(plan.Claims[0].Pods) != len(tc.pending) {
				t.Fatalf("want one claim for all pods; got %s", summary(plan))
			}
			pc := plan.Claims[0]
			claim := nodeclaim.New(pc)
			// Karpenter never launches a claim without its finalizer; Tailor creates it with one.
			if !slices.Equal(claim.Finalizers, []string{karpv1.TerminationFinalizer}) {
				t.Errorf("finalizers %v, want %s alone", claim.Finalizers, karpv1.TerminationFinalizer)
			}

			// Instance types: distinct, at most MaxInstanceTypes, the cheapest ones, by price.
			types, ok := requirementValues(claim, corev1.LabelInstanceTypeStable)
			if !ok || len(types) == 0 || len(types) > nodeclaim.MaxInstanceTypes {
				t.Fatalf("instance-type requirement = %v, want 1..%d values", types, nodeclaim.MaxInstanceTypes)
			}
			minPrice := map[string]float64{}
			for _, o := range pc.Options {
				if p, seen := minPrice[o.InstanceType.Name]; !seen || o.Offering.PricePerHour < p {
					minPrice[o.InstanceType.Name] = o.Offering.PricePerHour
				}
			}
			if want := min(len(minPrice), nodeclaim.MaxInstanceTypes); len(types) != want {
				t.Errorf("claim offers %d instance types, want %d of the %d the options hold", len(types), want, len(minPrice))
			}
			if types[0] != pc.Options[0].InstanceType.Name {
				t.Errorf("first instance type %s, want the cheapest option's %s", types[0], pc.Options[0].InstanceType.Name)
			}
			included := map[string]bool{}
			for i, name := range types {
				if included[name] {
					t.Errorf("instance type %s listed twice", name)
				}
				included[name] = true
				if _, ok := minPrice[name]; !ok {
					t.Errorf("instance type %s is not an option", name)
				}
				if i > 0 && minPrice[name] < minPrice[types[i-1]] {
					t.Errorf("%s (from %v) listed after %s (from %v)", name, minPrice[name], types[i-1], minPrice[types[i-1]])
				}
			}
			for name, p := range minPrice {
				if !included[name] && p < minPrice[types[len(types)-1]] {
					t.Errorf("%s (from %v) left out while dearer %s is in", name, p, types[len(types)-1])
				}
			}

			if zones, _ := requirementValues(claim, corev1.LabelTopologyZone); !slices.Equal(zones, tc.zones) {
				t.Errorf("zone requirement = %v, want %v", zones, tc.zones)
			}
			if cts, _ := requirementValues(claim, karpv1.CapacityTypeLabelKey); !slices.Equal(cts, tc.capacityTypes) {
				t.Errorf("capacity-type requirement = %v, want %v", cts, tc.capacityTypes)
			}
			for _, r := range pool.NodePool.Spec.Template.Spec.Requirements {
				if !slices.ContainsFunc(claim.Spec.Requirements, func(c karpv1.NodeSelectorRequirementWithMinValues) bool {
					return c.Key == r.Key && c.Operator == r.Operator && slices.Equal(c.Values, r.Values)
				}) {
					t.Errorf("NodePool requirement %v missing from the claim", r)
				}
			}

			if got := claim.Labels; got[karpv1.NodePoolLabelKey] != "general" || got["env"] != "prod" || got[team] != "payments" {
				t.Errorf("labels = %v, want nodepool, template and pinned custom labels", got)
			}
			if len(claim.Spec.Taints) != 1 || claim.Spec.Taints[0].Key != "example.com/dedicated" {
				t.Errorf("taints = %v, want the NodePool's", claim.Spec.Taints)
			}
			refs := claim.OwnerReferences
			if len(refs) != 1 || refs[0].Kind != "NodePool" || refs[0].Name != "general" || refs[0].UID != pool.NodePool.UID ||
				refs[0].APIVersion != karpv1.SchemeGroupVersion.String() || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
				t.Errorf("owner references = %+v, want the NodePool", refs)
			}
			if !hash.Stamped(claim.Annotations, pool.NodePool) {
				t.Errorf("annotations = %v, want the NodePool's template hash and its version", claim.Annotations)
			}
			if claim.GenerateName != "general-" {
				t.Errorf("generateName = %q", claim.GenerateName)
			}
			want := sumRequests(tc.pending)
			got := claim.Spec.Resources.Requests
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, w := got[name], want[name]; q.Cmp(w) != 0 {
					t.Errorf("requests[%s] = %s, want the pods' sum %s", name, q.String(), w.String())
				}
			}
		})
	}
}
