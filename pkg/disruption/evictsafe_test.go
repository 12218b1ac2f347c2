package disruption

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

func ownedBy(kind, name string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name,
			UID: types.UID("uid-" + name), Controller: ptr.To(true)})
	}
}

// The re-check before each eviction, whatever method started the drain: node a1 is being deleted
// with its pods still on it. A pod whose only place a waiting sibling takes first is held (the
// shape of harness seed 2580: a capacity-type spread with minDomains 3 allows one replica in all);
// a pod that fits a node that stays is evicted; a pod no controller brings back needs no place.
func TestUnplaceableHoldsThePodThatWouldFitNowhere_Seed2580(t *testing.T) {
	ctx := context.Background()
	for _, sibling := range []bool{false, true} {
		c := newCluster(t, newPool("default", onDemandOnly()))
		c.node("a1", "default", od2XLarge, claimDeleting(), nodeTainted(karpv1.DisruptedNoScheduleTaint))
		c.node("b1", "default", offering{odXLarge.instanceType, fake.ZoneB, odXLarge.capacityType})
		db0 := c.pod("db-0", "a1", "1500m", "512Mi", oneInAll, inZoneA, ownedBy("StatefulSet", "db"))
		web := c.pod("web", "a1", "500m", "512Mi", ownedBy("ReplicaSet", "web"))
		bare := c.pod("bare", "a1", "500m", "512Mi")
		if sibling {
			c.pod("db-1", "", "1500m", "512Mi", oneInAll, inZoneA, ownedBy("StatefulSet", "db"))
		}
		check := map[types.UID]*corev1.Pod{}
		for _, p := range []*corev1.Pod{db0, web, bare} {
			if comesBack(p) {
				check[p.UID] = p
			}
		}
		if check[bare.UID] != nil {
			t.Fatalf("a pod without a controller is checked for a place; nothing brings it back")
		}
		got := unplaceable(ctx, testPlanner(t), c.State, check)
		if _, ok := got[web.UID]; ok {
			t.Errorf("sibling=%v: web held (%s); it fits node b1", sibling, got[web.UID])
		}
		why, held := got[db0.UID]
		if held != sibling {
			t.Errorf("sibling=%v: db-0 held=%v (%q); want held only when db-1 waits for the one slot", sibling, held, why)
		}
		if held && !strings.Contains(why, "topology spread") {
			t.Errorf("db-0 held for %q; want the spread named", why)
		}
	}
}
