package lifecycle

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
)

// writtenTTL bounds how long the controller prefers a NodeClaim it wrote over the informer's copy:
// long enough for the informer to catch up on a loaded API server, which ran 30 s behind in the
// fleet benchmark's scale-ups.
const writtenTTL = 2 * time.Minute

// writtenClaims are the claims the controller reads: the informer's, or the one the controller's
// last write returned when that is newer. A claim steps through launch, registration and
// initialization one write at a time, and each write's own informer event, or the event of the
// node that joins as the launch returns, brings the claim back before the informer holds what was
// written: read from the informer alone, the step ran again on the old claim and its write
// failed as a conflict (272 of 910 status writes when 250 NodeClaims launched at once), and again
// at each retry until the informer caught up.
//
// client-go's MutationCache does the same, but keeps the last 100 writes only: when 1,000 claims
// launched at once and the informer ran 30 s behind, the writes it had dropped were read back
// from the informer, and 2,902 of 4,001 label writes and 2,627 of 5,441 status writes of a
// 4,000-pod scale-up of the fleet benchmark conflicted. These are kept for every claim, until the
// informer is as new or writtenTTL has passed.
type writtenClaims struct {
	informer cache.Store
	now      func() time.Time
	mu       sync.Mutex
	claims   map[string]writtenClaim
	swept    time.Time
}

// writtenClaim is a claim as a write returned it, and when.
type writtenClaim struct {
	claim *karpv1.NodeClaim
	at    time.Time
}

func newWritten(informer cache.Store, now func() time.Time) *writtenClaims {
	return &writtenClaims{informer: informer, now: now, claims: map[string]writtenClaim{}}
}

// wrote keeps claim as the controller's write returned it.
func (w *writtenClaims) wrote(claim *karpv1.NodeClaim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	// A copy: the caller goes on changing the claim it got back (launch sets the status on it
	// before writing that), and a write that then fails must not show here.
	w.claims[claim.Name] = writtenClaim{claim: claim.DeepCopy(), at: now}
	if now.Sub(w.swept) < writtenTTL {
		return
	}
	w.swept = now
	for name, c := range w.claims {
		if now.Sub(c.at) > writtenTTL {
			delete(w.claims, name)
		}
	}
}

// get returns the newest claim named name the controller knows of: the informer's, or its own
// write when that is newer. A claim the informer does not have is not returned: it is gone, or
// not created yet.
func (w *writtenClaims) get(name string) (*karpv1.NodeClaim, bool) {
	obj, ok, err := w.informer.GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	cached, ok := obj.(*karpv1.NodeClaim)
	if !ok {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	mine, ok := w.claims[name]
	if !ok {
		return cached, true
	}
	order, err := resourceversion.CompareResourceVersion(mine.claim.ResourceVersion, cached.ResourceVersion)
	if err != nil || order <= 0 || w.now().Sub(mine.at) > writtenTTL {
		delete(w.claims, name)
		return cached, true
	}
	return mine.claim, true
}

// recordingClaims is the NodeClaim client that keeps each claim it wrote.
type recordingClaims struct {
	karpclient.NodeClaimInterface
	written *writtenClaims
}

func (r recordingClaims) Update(ctx context.Context, claim *karpv1.NodeClaim, opts metav1.UpdateOptions) (*karpv1.NodeClaim, error) {
	out, err := r.NodeClaimInterface.Update(ctx, claim, opts)
	if err == nil {
		r.written.wrote(out)
	}
	return out, err
}

func (r recordingClaims) UpdateStatus(ctx context.Context, claim *karpv1.NodeClaim, opts metav1.UpdateOptions) (*karpv1.NodeClaim, error) {
	out, err := r.NodeClaimInterface.UpdateStatus(ctx, claim, opts)
	if err == nil {
		r.written.wrote(out)
	}
	return out, err
}

// claim returns the newest NodeClaim named name the controller knows of, or false.
func (c *Controller) claim(name string) (*karpv1.NodeClaim, bool) { return c.written.get(name) }
