// Package cloud defines what Tailor needs from a cloud: a catalog of instance types with priced,
// zonal offerings, and the ability to launch, find and terminate the instance behind a NodeClaim.
package cloud

import (
	"context"
	"errors"
	"fmt"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// CloudProvider is implemented by every cloud Tailor can launch capacity in. Implementations are
// safe for concurrent use; every call may do I/O and must honour ctx.
type CloudProvider interface {
	// Name identifies the provider in logs, metrics and provider IDs.
	Name() string
	// Create launches one instance for the NodeClaim and returns a copy of the claim hydrated with
	// what the cloud chose: status.providerID, status.imageID, status.capacity, status.allocatable
	// and the labels of the chosen instance type, zone and capacity type; and status.nodeName when
	// the cloud already knows the name the node will register with. It must be idempotent for
	// the same NodeClaim (same UID): a retry after a crash returns the instance already launched.
	Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error)
	// Delete terminates the instance behind the claim. It returns a NotFoundError once the instance
	// is gone, so callers can retry until they see one.
	Delete(ctx context.Context, claim *karpv1.NodeClaim) error
	// Get returns the claim as the cloud sees it, or a NotFoundError.
	Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error)
	// List returns every instance that Tailor launched and that still exists, for garbage collection.
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
	// InstanceTypes returns every instance type the NodePool may use, including those whose
	// offerings are all unavailable right now, so that explanations can name them.
	InstanceTypes(ctx context.Context, pool *karpv1.NodePool) ([]*InstanceType, error)
	// IsDrifted reports why the instance no longer matches its node class, or "" when it does.
	IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (DriftReason, error)
}

// DriftReason names the way a launched instance differs from what its node class asks for now.
type DriftReason string

// NotFoundError says the instance does not exist (any more).
type NotFoundError struct{ ProviderID string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("instance %q not found", e.ProviderID) }

// IsNotFound reports whether err is, or wraps, a NotFoundError.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// InsufficientCapacityError says the cloud had no capacity for any offering the claim allowed.
// The offerings tried are listed so the caller can mark them unavailable for a while.
type InsufficientCapacityError struct {
	Offerings []OfferingKey
	Message   string
}

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity for %d offerings: %s", len(e.Offerings), e.Message)
}

// IsInsufficientCapacity reports whether err is, or wraps, an InsufficientCapacityError.
func IsInsufficientCapacity(err error) bool {
	var ice *InsufficientCapacityError
	return errors.As(err, &ice)
}
