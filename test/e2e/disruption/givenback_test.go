package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// Capacity launched for pods that no longer need it is given back at once: a Deployment scaled to
// zero while its nodes are still on their way leaves no NodeClaim behind, though its NodePool
// would not consolidate for an hour, and each claim says why it went.
func TestCapacityNoPodNeedsIsGivenBack(t *testing.T) {
	held := make(chan struct{})
	e := env.NewWithJoiner(t, func(inner fake.Joiner) fake.Joiner {
		return env.JoinerFunc(func(ctx context.Context, inst fake.Instance) error {
			select { // no node joins before the test lets it
			case <-held:
			case <-ctx.Done():
				return ctx.Err()
			}
			return inner.Join(ctx, inst)
		})
	})
	defer close(held)
	np := env.NodePool("default")
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(time.Hour)
	e.CreateNodePool(np)
	d := env.DeploymentOf("unneeded", 4, "1500m", "1Gi")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitForClaims(1, 60*time.Second)
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	launched := len(claims.Items)
	e.Scale(d, 0)
	e.WaitFor("every NodeClaim given back", 60*time.Second, func() (bool, string) {
		list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d of %d NodeClaims left", len(list.Items), launched)
	})
	if said := e.EventsFor("Unneeded", "NodeClaim"); len(said) < launched {
		t.Errorf("%d Unneeded Events for %d NodeClaims given back: %v", len(said), launched, env.Notes(said))
	}
}
