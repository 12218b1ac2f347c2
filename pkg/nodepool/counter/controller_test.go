package counter

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
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

// statusWrites records the NodePool status writes; nothing else of it may be called.
type statusWrites struct {
	karpclient.NodePoolInterface
	written []corev1.ResourceList
}

func (s *statusWrites) UpdateStatus(_ context.Context, np *karpv1.NodePool, _ metav1.UpdateOptions) (*karpv1.NodePool, error) {
	s.written = append(s.written, np.Status.Resources)
	return np, nil
}

// A pool whose NodeClaims keep changing is counted at once, then at most once per countEvery:
// the events between two counts are folded into the next.
func TestAPoolIsCountedAtMostOncePerSecond(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	pools, claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil), cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	_ = pools.Add(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	addClaim := func(name string) {
		_ = claims.Add(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}})
	}
	writes := &statusWrites{}
	c := &Controller{opts: Options{NodePools: writes, PoolLister: karplisters.NewNodePoolLister(pools),
		ClaimLister: karplisters.NewNodeClaimLister(claims), Clock: clk}, counted: map[string]time.Time{}}
	ctx := context.Background()
	nodes := func(i int) string {
		q := writes.written[i][ResourceNodes]
		return q.String()
	}

	addClaim("a")
	if _, err := c.reconcile(ctx, "default"); err != nil || len(writes.written) != 1 || nodes(0) != "1" {
		t.Fatalf("first count: err %v, writes %v; want one write of 1 node", err, writes.written)
	}
	addClaim("b")
	clk.Step(300 * time.Millisecond)
	requeue, err := c.reconcile(ctx, "default")
	if err != nil || len(writes.written) != 1 || requeue != countEvery-300*time.Millisecond {
		t.Fatalf("a count 300 ms after the last: requeue %v, err %v, writes %d; want none written, back in %v", requeue, err, len(writes.written), countEvery-300*time.Millisecond)
	}
	addClaim("c")
	clk.Step(requeue)
	if _, err := c.reconcile(ctx, "default"); err != nil || len(writes.written) != 2 || nodes(1) != "3" {
		t.Fatalf("the count countEvery after the last: err %v, writes %v; want a second write of 3 nodes", err, writes.written)
	}
}
