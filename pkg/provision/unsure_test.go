package provision

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// apiClaims is a NodeClaim client whose List answers with claims, or err when set; nothing else
// of it may be called.
type apiClaims struct {
	karpclient.NodeClaimInterface
	claims []karpv1.NodeClaim
	err    error
	lists  int
}

func (a *apiClaims) List(context.Context, metav1.ListOptions) (*karpv1.NodeClaimList, error) {
	a.lists++
	if a.err != nil {
		return nil, a.err
	}
	return &karpv1.NodeClaimList{Items: a.claims}, nil
}

// After a create whose answer was lost, the next round plans from the NodeClaims the API server
// has, also those the informer has not shown yet: the create may have stored one, and planning
// without it launched a second claim for the same pods (TestAPIServerOutageDuringABurst). A
// create the API server refused, or none at all, leaves the rounds on the informer alone; while
// the API server cannot be listed, no round plans.
func TestAfterACreateWithoutAnswerTheRoundPlansFromTheAPIServersClaims(t *testing.T) {
	ctx := context.Background()
	stored := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-x7k2p", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
	client := &apiClaims{claims: []karpv1.NodeClaim{*stored}}
	claimStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	p := New(Options{NodeClaims: client, ClaimLister: karplisters.NewNodeClaimLister(claimStore),
		Clock: clocktesting.NewFakeClock(time.Now())})
	names := func() []string {
		t.Helper()
		claims, err := p.claimsToPlanFrom(ctx)
		if err != nil {
			t.Fatalf("claims to plan from: %v", err)
		}
		var out []string
		for _, c := range claims {
			out = append(out, c.Name)
		}
		return out
	}
	lists := func() int { return client.lists }

	if got := names(); len(got) != 0 || lists() != 0 {
		t.Fatalf("with every create answered: claims %v, %d lists of the API server; want the informer's (none) and no list", got, lists())
	}
	p.noteCreateError(apierrors.NewConflict(schema.GroupResource{Group: karpv1.Group, Resource: "nodeclaims"}, "default-x7k2p", errors.New("exists")))
	if got := names(); len(got) != 0 || lists() != 0 {
		t.Fatalf("after a create the API server refused: claims %v, %d lists; want none and none", got, lists())
	}

	p.noteCreateError(io.ErrUnexpectedEOF)
	client.err = errors.New("connection refused")
	if _, err := p.claimsToPlanFrom(ctx); err == nil {
		t.Fatal("a round planned while the API server could not say whether the create stored its claim")
	}
	client.err = nil
	if got := names(); len(got) != 1 || got[0] != stored.Name {
		t.Fatalf("once the API server answers: claims %v, want %s", got, stored.Name)
	}
	before := lists()
	if got := names(); len(got) != 1 || lists() != before+1 {
		t.Errorf("the next round, the informer still behind: claims %v and %d more lists; want the claim and the API server asked again", got, lists()-before)
	}
	_ = claimStore.Add(stored)
	before = lists()
	if got := names(); len(got) != 1 || lists() != before {
		t.Errorf("once the informer shows it: claims %v and %d more lists; want it once, from the informer", got, lists()-before)
	}
	if got := names(); len(got) != 1 || lists() != before {
		t.Errorf("the round after: claims %v and %d more lists", got, lists()-before)
	}

	// Two readers side by side (a round and a ProvisioningRequest's check): a list settles only
	// the creates lost before it began, not one lost while it ran.
	p.noteCreateError(io.ErrUnexpectedEOF)
	lost, ask := p.mustAskAPIServer(nil)
	if !ask {
		t.Fatal("a lost create did not ask for a list")
	}
	p.noteCreateError(io.ErrUnexpectedEOF) // lost while the list runs
	p.adoptUnlisted([]*karpv1.NodeClaim{stored}, []karpv1.NodeClaim{*stored}, lost)
	if _, ask := p.mustAskAPIServer([]*karpv1.NodeClaim{stored}); !ask {
		t.Error("a create lost while a list ran was taken as settled by it")
	}
}
