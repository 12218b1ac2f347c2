package provision

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// A create whose answer is lost (the connection dropped, the API server went away or timed out)
// may have stored the NodeClaim all the same. The claim informer then shows it only once its watch
// is back and has caught up, and a round that plans before that launches a second claim for the
// same pods: TestAPIServerOutageDuringABurst, three e2e tests side by side, left one c7g.8xlarge
// empty beside the one its 23 pods ran on. So after such a create, the next round lists the
// NodeClaims from the API server itself, and plans from every claim it finds there, as it does
// from the claims its creates returned (withCreated). While that list fails, no round plans.

// noteCreateError records a failed create whose NodeClaim may have been stored.
func (p *Provisioner) noteCreateError(err error) {
	if !createMayHaveHappened(err) {
		return
	}
	p.mu.Lock()
	p.unsure.lost++
	p.mu.Unlock()
}

// unsureCreates is what the provisioner knows of creates whose answer was lost. Rounds and
// ProvisioningRequest checks (PlanApart) read the claims side by side, so a list settles only
// the creates lost before it began.
type unsureCreates struct {
	// lost counts the creates whose answer was lost; settled is the count a list of the API
	// server's NodeClaims began after.
	lost, settled uint64
	// unlisted are the claims a list found that the informer has not shown yet: the API server
	// is listed again each round until it does, as the informer's watch may take as long as it
	// was gone to come back.
	unlisted map[string]bool
}

// createMayHaveHappened reports whether the API server may have stored what a create that failed
// with err sent: unless it answered with a client error (invalid, conflict, forbidden, throttled),
// which it sends before storing anything.
func createMayHaveHappened(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code < 400 || code >= 500
	}
	return !errors.Is(err, context.Canceled)
}

// claimsToPlanFrom are the listed NodeClaims and those this process created that the lister lacks
// yet, and, after a create whose outcome is unknown, those the API server has and the lister
// does not.
func (p *Provisioner) claimsToPlanFrom(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	cached, err := p.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	if lost, ask := p.mustAskAPIServer(cached); ask {
		live, err := p.opts.NodeClaims.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing NodeClaims from the API server, which may have stored a NodeClaim whose create got no answer: %w", err)
		}
		p.adoptUnlisted(cached, live.Items, lost)
	}
	return p.withCreated(cached), nil
}

// mustAskAPIServer reports whether the API server's NodeClaims must be listed before planning
// from cached: a create's answer was lost since the last list began, or a claim that list found
// is not cached yet. It returns the count of lost creates a list begun now settles.
func (p *Provisioner) mustAskAPIServer(cached []*karpv1.NodeClaim) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := &p.unsure
	if len(u.unlisted) > 0 {
		for _, c := range cached {
			delete(u.unlisted, c.Name)
		}
	}
	return u.lost, u.lost > u.settled || len(u.unlisted) > 0
}

// adoptUnlisted counts the claims of live that cached lacks as created by this process (see
// withCreated), and settles the creates lost before the list began (lost).
func (p *Provisioner) adoptUnlisted(cached []*karpv1.NodeClaim, live []karpv1.NodeClaim, lost uint64) {
	seen := make(map[string]bool, len(cached))
	for _, c := range cached {
		seen[c.Name] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Clock.Now()
	unlisted := map[string]bool{}
	for i := range live {
		c := &live[i]
		if seen[c.Name] || c.DeletionTimestamp != nil {
			continue
		}
		// Counted as created now, again at each list until the informer shows it: withCreated
		// forgets a created claim once the informer is past it (createdClaim.gone).
		p.created[c.Name] = createdClaim{claim: c, at: now}
		unlisted[c.Name] = true
	}
	p.unsure.unlisted = unlisted
	p.unsure.settled = max(p.unsure.settled, lost)
}
