package clusterview

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodepool"
)

// A pool's usage is what its launched claims have, the largest type a launching claim may become,
// and one node each; a claim being deleted or of no pool counts nowhere. The sums are built in
// place, and adding must not reach into the claims' own quantities.
func TestPoolUsageAddsUpEachPoolsClaims(t *testing.T) {
	resources := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	claim := func(name, pool string, capacity corev1.ResourceList, types ...string) *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if pool != "" {
			c.Labels[karpv1.NodePoolLabelKey] = pool
		}
		c.Status.Capacity = capacity
		if len(types) > 0 {
			c.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: types}}
		}
		return c
	}
	launched := claim("launched", "a", resources("4", "16Gi"))
	deleting := claim("deleting", "a", resources("64", "256Gi"))
	deleting.DeletionTimestamp = &metav1.Time{}
	claims := []*karpv1.NodeClaim{
		launched,
		claim("launching", "a", nil, "small", "large"),
		deleting,
		claim("other", "b", resources("2", "8Gi")),
		claim("no-pool", "", resources("8", "32Gi")),
	}
	typesByPool := map[string][]*cloud.InstanceType{"a": {
		{Name: "small", Capacity: resources("2", "4Gi")},
		{Name: "large", Capacity: resources("8", "32Gi")},
		{Name: "not-allowed", Capacity: resources("96", "384Gi")},
	}}
	got := PoolUsage(claims, typesByPool)
	want := map[string]corev1.ResourceList{
		"a": {corev1.ResourceCPU: resource.MustParse("12"), corev1.ResourceMemory: resource.MustParse("48Gi"), nodepool.ResourceNodes: resource.MustParse("2")},
		"b": {corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), nodepool.ResourceNodes: resource.MustParse("1")},
	}
	if len(got) != len(want) {
		t.Fatalf("usage of %d pools, want %d: %v", len(got), len(want), got)
	}
	for pool, w := range want {
		for name, q := range w {
			if g := got[pool][name]; g.Cmp(q) != 0 {
				t.Errorf("pool %s %s = %s, want %s", pool, name, g.String(), q.String())
			}
		}
	}
	if cpu := launched.Status.Capacity[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("the launched claim's capacity changed to %s", cpu.String())
	}
}
