package provision

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// A NodeClaim this process created is counted while the informer has not shown it, for as long
// as the informer is behind its creation: on a loaded API server a watch ran more than 30 s behind
// a burst of creates, the old fixed 30 s forgot about 400 claims in flight, and their pods were
// planned and launched again. Once the informer is past the create without showing the claim, it
// was deleted, and it is forgotten createdGrace later. Where versions cannot be compared, the fixed
// wait stays; an informer that never catches up lets it go after createdMax.
func TestAClaimCreatedIsCountedUntilTheInformerIsPastItsCreation(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	seenUpTo := "90"
	p := New(Options{ClaimLister: karplisters.NewNodeClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)),
		ClaimsSeenUpTo: func() string { return seenUpTo }, Clock: clk})
	create := func(name, version string) {
		p.created[name] = createdClaim{claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version}}, at: clk.Now()}
	}
	counted := func(name string) bool {
		t.Helper()
		claims, err := p.claimsToPlanFrom(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(claims, func(c *karpv1.NodeClaim) bool { return c.Name == name })
	}

	create("default-a", "100")
	clk.Step(4 * time.Minute)
	if !counted("default-a") {
		t.Fatal("a claim was forgotten while the informer was still behind its creation")
	}
	seenUpTo = "100"
	if !counted("default-a") {
		t.Fatal("a claim was forgotten the moment the informer's version reached it, before its cache could show it")
	}
	// A relist that goes back behind the create starts the wait again.
	seenUpTo = "95"
	clk.Step(createdGrace)
	if !counted("default-a") {
		t.Fatal("a claim was forgotten while the informer was behind its creation again")
	}
	seenUpTo = "120"
	if !counted("default-a") {
		t.Fatal("a claim was forgotten before the informer had been past its creation for createdGrace")
	}
	clk.Step(createdGrace)
	if counted("default-a") {
		t.Error("a claim the informer has been past for createdGrace without showing it is still counted")
	}

	// The informer shows the claim: it is counted from the informer, and no longer as created.
	create("default-b", "130")
	shown := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-b", ResourceVersion: "130"}}
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	_ = store.Add(shown)
	p.opts.ClaimLister = karplisters.NewNodeClaimLister(store)
	if !counted("default-b") || len(p.created) != 0 {
		t.Errorf("a claim the informer shows: counted %v, still held as created %v", counted("default-b"), len(p.created) != 0)
	}

	// Versions that cannot be compared (an informer that has not synced): the fixed wait.
	seenUpTo = ""
	create("default-c", "140")
	clk.Step(createdTTL)
	if !counted("default-c") {
		t.Fatal("without comparable versions, a claim was forgotten before createdTTL")
	}
	clk.Step(time.Second)
	if counted("default-c") {
		t.Error("without comparable versions, a claim was still counted after createdTTL")
	}

	// An informer that stays behind for createdMax.
	seenUpTo = "150"
	create("default-d", "160")
	clk.Step(createdMax)
	if !counted("default-d") {
		t.Fatal("a claim was forgotten before createdMax while the informer was behind it")
	}
	clk.Step(time.Second)
	if counted("default-d") {
		t.Error("a claim the informer never showed is still counted after createdMax")
	}
}
