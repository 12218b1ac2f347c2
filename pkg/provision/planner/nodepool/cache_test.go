package nodepool

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// The cache hands back a pool's offerings while its template and its instance types are the same,
// and works them out anew when either changes; what it hands back is what a fresh State has.
func TestCacheKeepsOfferingsWhileTemplateAndTypesStay(t *testing.T) {
	catalog := fake.Catalog()
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general", UID: "uid-general"}}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}}
	var c Cache
	first := NewState(c.Prepare([]Pool{{NodePool: np, InstanceTypes: catalog}})[0])
	fresh := NewState(Pool{NodePool: np, InstanceTypes: catalog})
	if len(first.Compatible) == 0 || len(first.Compatible) != len(fresh.Compatible) {
		t.Fatalf("prepared %d offerings, a fresh state %d", len(first.Compatible), len(fresh.Compatible))
	}
	for i, cand := range first.Compatible {
		if f := fresh.Compatible[i]; cand.It != f.It || cand.Offering.Zone != f.Offering.Zone || cand.Offering.CapacityType != f.Offering.CapacityType ||
			!maps.Equal(cand.Labels, f.Labels) {
			t.Fatalf("offering %d differs from a fresh state's: %s %+v, %s %+v", i, cand.It.Name, cand.Offering, f.It.Name, f.Offering)
		}
	}

	// The same NodePool, read again (a newer object, its status changed), with the same types.
	again := np.DeepCopy()
	again.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: *first.Compatible[0].Allocatable.Cpu()}
	kept := c.Prepare([]Pool{{NodePool: again, InstanceTypes: slices.Clone(catalog)}})[0]
	if NewState(kept).Compatible[0] != first.Compatible[0] {
		t.Errorf("the same template and types were worked out anew")
	}
	if kept.NodePool != again {
		t.Errorf("the prepared pool does not carry the NodePool it was given")
	}

	// A template that allows spot too: more offerings.
	spot := again.DeepCopy()
	spot.Spec.Template.Spec.Requirements[0].Values = append(spot.Spec.Template.Spec.Requirements[0].Values, karpv1.CapacityTypeSpot)
	withSpot := NewState(c.Prepare([]Pool{{NodePool: spot, InstanceTypes: catalog}})[0])
	if len(withSpot.Compatible) <= len(first.Compatible) {
		t.Errorf("after the template changed: %d offerings, want more than %d", len(withSpot.Compatible), len(first.Compatible))
	}
	if !slices.ContainsFunc(withSpot.Compatible, func(c *Candidate) bool { return c.It == catalog[0] }) {
		t.Fatalf("no offering of %s, the type the next step replaces", catalog[0].Name)
	}

	// Types built anew (another object for one of them): worked out anew.
	rebuilt := slices.Clone(catalog)
	copied := *rebuilt[0]
	rebuilt[0] = &copied
	if got := NewState(c.Prepare([]Pool{{NodePool: spot, InstanceTypes: rebuilt}})[0]); slices.ContainsFunc(got.Compatible, func(c *Candidate) bool { return c.It == catalog[0] }) {
		t.Errorf("offerings of a type object no longer listed are still handed out")
	}
}
