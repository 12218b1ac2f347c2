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
	p.unsureCreates++
	p.mu.Unlock()
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
	p.mu.Lock()
	unsure := p.unsureCreates
	p.mu.Unlock()
	if unsure > 0 {
		live, err := p.opts.NodeClaims.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing NodeClaims from the API server, which may have stored a NodeClaim whose create got no answer: %w", err)
		}
		p.adoptUnlisted(cached, live.Items, unsure)
	}
	return p.withCreated(cached), nil
}

// adoptUnlisted counts the claims of live that cached lacks as created by this process (see
// withCreated), and clears the unsure creates the list settled.
func (p *Provisioner) adoptUnlisted(cached []*karpv1.NodeClaim, live []karpv1.NodeClaim, settled uint64) {
	seen := make(map[string]bool, len(cached))
	for _, c := range cached {
		seen[c.Name] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Clock.Now()
	for i := range live {
		c := &live[i]
		if _, known := p.created[c.Name]; seen[c.Name] || known || c.DeletionTimestamp != nil {
			continue
		}
		p.created[c.Name] = createdClaim{claim: c, at: now}
	}
	p.unsureCreates -= settled
}
