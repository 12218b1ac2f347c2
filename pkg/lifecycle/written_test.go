package lifecycle

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
)

// apiServer answers writes as the API server would, with the next resource version.
type apiServer struct {
	karpclient.NodeClaimInterface
	rv int
}

func (a *apiServer) UpdateStatus(_ context.Context, claim *karpv1.NodeClaim, _ metav1.UpdateOptions) (*karpv1.NodeClaim, error) {
	a.rv++
	out := claim.DeepCopy()
	out.ResourceVersion = strconv.Itoa(a.rv)
	return out, nil
}

// A claim the controller wrote is read back as written until the informer catches up, and then
// as the informer has it, newer writes of others included; a claim the informer no longer has is
// not read at all.
func TestTheControllerReadsTheClaimItWrote(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &karpv1.NodeClaim{}, 0, cache.Indexers{})
	c := &Controller{written: newWritten(inf.GetStore(), time.Now)}
	server := &apiServer{rv: 1}
	claims := recordingClaims{NodeClaimInterface: server, written: c.written}
	cached := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-a", ResourceVersion: "1"}}
	if err := inf.GetStore().Add(cached); err != nil {
		t.Fatal(err)
	}

	launched := cached.DeepCopy()
	launched.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", metav1.Now().Time)
	if _, err := claims.UpdateStatus(context.Background(), launched, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.claim("claim-a"); !ok || !got.IsTrue(karpv1.ConditionTypeLaunched) || got.ResourceVersion != "2" {
		t.Fatalf("before the informer caught up, read %v (found %t), want the claim as written (Launched, version 2)", got, ok)
	}

	// Another controller wrote after it, and the informer has that.
	other := launched.DeepCopy()
	other.ResourceVersion = "3"
	other.Labels = map[string]string{"by": "other"}
	if err := inf.GetStore().Update(other); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.claim("claim-a"); got.ResourceVersion != "3" || got.Labels["by"] != "other" {
		t.Fatalf("read version %s, want the informer's newer 3", got.ResourceVersion)
	}

	if err := inf.GetStore().Delete(other); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.claim("claim-a"); ok {
		t.Errorf("read %s after the informer dropped it", got.Name)
	}
}

// Every claim of a large scale-up is read back as written while the informer is behind, not only
// the last hundred written (client-go's MutationCache keeps 100: at 1,000 claims launched at
// once, the others were read from the informer and their next writes conflicted); a write older
// than writtenTTL gives way to the informer.
func TestTheControllerReadsEveryClaimItWroteInAScaleUp(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &karpv1.NodeClaim{}, 0, cache.Indexers{})
	clk := clocktesting.NewFakeClock(time.Now())
	c := &Controller{written: newWritten(inf.GetStore(), clk.Now)}
	server := &apiServer{rv: 1000}
	claims := recordingClaims{NodeClaimInterface: server, written: c.written}
	const n = 1000
	for i := range n {
		cached := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%04d", i), ResourceVersion: strconv.Itoa(i + 1)}}
		if err := inf.GetStore().Add(cached); err != nil {
			t.Fatal(err)
		}
		launched := cached.DeepCopy()
		launched.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", clk.Now())
		if _, err := claims.UpdateStatus(context.Background(), launched, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stale := 0
	for i := range n {
		if got, ok := c.claim(fmt.Sprintf("claim-%04d", i)); !ok || !got.IsTrue(karpv1.ConditionTypeLaunched) {
			stale++
		}
	}
	if stale > 0 {
		t.Errorf("%d of %d claims written were read back as the informer's older copy", stale, n)
	}
	clk.Step(writtenTTL + time.Second)
	if got, _ := c.claim("claim-0000"); got.IsTrue(karpv1.ConditionTypeLaunched) {
		t.Error("a write older than writtenTTL is still preferred to the informer's copy")
	}
}
