package cloud

import (
	"context"
	"time"
)

// InterruptionKind is what the cloud says will happen to an instance.
type InterruptionKind string

// Kinds of interruption notices. The names are the AWS notices', which every Tailor cloud speaks;
// a cloud that has fewer kinds uses the ones it has.
const (
	// InterruptionSpot: the spot instance is reclaimed at the deadline (two minutes on EC2).
	InterruptionSpot InterruptionKind = "SpotInterruption"
	// InterruptionRebalance: the spot instance is at elevated risk of interruption. It is only
	// reported: acting on every recommendation would churn spot fleets for notices that mostly
	// come to nothing, which is why Karpenter does not act on them either.
	InterruptionRebalance InterruptionKind = "RebalanceRecommendation"
	// InterruptionScheduledChange: maintenance or retirement of the instance is scheduled.
	InterruptionScheduledChange InterruptionKind = "ScheduledChange"
	// InterruptionStopping: the instance is stopping or stopped.
	InterruptionStopping InterruptionKind = "InstanceStopping"
	// InterruptionTerminating: the instance is shutting down or terminated.
	InterruptionTerminating InterruptionKind = "InstanceTerminating"
	// InterruptionCapacityReservation: the capacity reservation the instance runs in is reclaimed.
	InterruptionCapacityReservation InterruptionKind = "CapacityReservationInterruption"
)

// Interruption is one notice about one instance.
type Interruption struct {
	// ProviderID names the instance as its NodeClaim's status.providerID does.
	ProviderID string
	Kind       InterruptionKind
	// Deadline is when the instance is expected to go away; zero when the notice sets none.
	Deadline time.Time
}

// InterruptionHandler acts on one notice. An error means "not handled": the source delivers the
// notice again later, so a notice is never lost to an API server hiccup.
type InterruptionHandler func(ctx context.Context, n Interruption) error

// InterruptionSource is implemented by clouds that warn before they take instances away. Tailor
// runs it on the leader only, so notices are acted on once.
type InterruptionSource interface {
	// HandleInterruptions delivers every notice to handle until ctx ends, and returns then.
	HandleInterruptions(ctx context.Context, handle InterruptionHandler) error
}
