package nodepool

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// The provisioner and the disruption loop share the cache and list nearly the same pools: a pool
// one of them leaves out stays kept for the other, and a pool neither asks for (a deleted
// NodePool) is forgotten after forgetAfter calls.
func TestCacheKeepsPoolsEitherCallerAsksFor(t *testing.T) {
	catalog := fake.Catalog()
	pool := func(name string) Pool {
		return Pool{NodePool: &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + types.UID(name)}}, InstanceTypes: catalog}
	}
	both, one := pool("both"), pool("one")
	var c Cache
	first := NewState(c.Prepare([]Pool{both, one})[1]).Compatible[0]
	for range 3 * forgetAfter {
		c.Prepare([]Pool{both})
		c.Prepare([]Pool{both, one})
	}
	if got := NewState(c.Prepare([]Pool{both, one})[1]).Compatible[0]; got != first {
		t.Errorf("a pool the other caller asks for every time was worked out anew")
	}
	for range forgetAfter {
		c.Prepare([]Pool{both})
	}
	c.mu.Lock()
	_, kept := c.pools["uid-one"]
	n := len(c.pools)
	c.mu.Unlock()
	if kept || n != 1 {
		t.Errorf("after %d calls without it, the pool is still kept (%d pools kept)", forgetAfter, n)
	}
}
