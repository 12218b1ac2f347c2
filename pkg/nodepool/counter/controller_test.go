package counter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestCountSumsCapacityAndCountsNodes(t *testing.T) {
	claim := func(cpu, memory string) *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{}
		if cpu != "" {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
		}
		return c
	}
	for _, tc := range []struct {
		name              string
		claims            []*karpv1.NodeClaim
		nodes, cpu, memGi string
	}{
		{name: "none", nodes: "0", cpu: "0", memGi: "0"},
		{name: "launched", claims: []*karpv1.NodeClaim{claim("2", "8Gi"), claim("4", "16Gi")}, nodes: "2", cpu: "6", memGi: "24Gi"},
		{name: "one still launching", claims: []*karpv1.NodeClaim{claim("2", "8Gi"), claim("", "")}, nodes: "2", cpu: "2", memGi: "8Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Count(tc.claims)
			for name, want := range map[corev1.ResourceName]string{ResourceNodes: tc.nodes, corev1.ResourceCPU: tc.cpu, corev1.ResourceMemory: tc.memGi} {
				q := got[name]
				if q.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s = %s, want %s", name, q.String(), want)
				}
			}
		})
	}
}
