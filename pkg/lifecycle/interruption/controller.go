// Package interruption acts on the cloud's interruption notices, whichever cloud sends them. An
// interruption is involuntary: the instance goes at the deadline whatever Tailor does, so no
// budget applies. The node is tainted, capacity for its pods is planned at once, and its
// NodeClaim is deleted so that the termination path drains it before the cloud takes it.
package interruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/cache"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/lifecycle/forceful"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// Method is the disruption reason interruptions are counted and recorded under.
const Method = forceful.InterruptedMethod

// Options are what the controller reads and writes.
type Options struct {
	NodeClaims  karpclient.NodeClaimInterface
	ClaimLister karplisters.NodeClaimLister
	Nodes       corelisters.NodeLister
	// Recorder may be nil, in which case no Events are written.
	Recorder  events.EventRecorder
	Disrupter *forceful.Disrupter
	// Clock times how long a handled notice is remembered (the real clock when nil).
	Clock clock.Clock
}

// Outcomes of a notice, the outcome label of tailor_interruption_notices_total.
const (
	OutcomeDisrupted = "Disrupted"
	OutcomeRecorded  = "Recorded"
	// OutcomeDuplicate: the same notice (instance and kind) was acted on already.
	OutcomeDuplicate = "Duplicate"
	// OutcomeAlreadyRemoving: another notice, or another method, is removing the node already.
	OutcomeAlreadyRemoving = "AlreadyRemoving"
	OutcomeUnknown         = "Unknown"
)

// rememberFor is how long a notice acted on is remembered, so that copies of it do nothing: SQS
// delivers at least once, EventBridge retries, and several receivers may hold copies at once. It
// outlasts the 5-minute retention of the queue Karpenter's setup creates, so any copy still
// queued is inside it; a copy later than that, or after a restart, finds the claim deleted.
const rememberFor = 10 * time.Minute

// Controller handles interruption notices.
type Controller struct {
	opts Options
	// locks serialize the notices of one instance: two copies handled at once must not both
	// act before either is remembered.
	locks *keyLocks
	// acted holds the notices acted on (instance and kind) and the instances being removed. The
	// informer cache alone cannot say: a claim deleted a moment ago still shows undeleted there.
	acted *cache.Expiring
}

// New returns a Controller; hand its Handle to the cloud's InterruptionSource.
func New(opts Options) *Controller {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{opts: opts, locks: newKeyLocks(), acted: cache.NewExpiringWithClock(opts.Clock)}
}

// Handle acts on one notice. A rebalance recommendation is only recorded (see
// cloud.InterruptionRebalance); every other kind removes the node. A notice acted on already, or
// for a node already being removed, does nothing again. An error leaves the notice with the
// source, which delivers it again.
func (c *Controller) Handle(ctx context.Context, n cloud.Interruption) error {
	outcome, err := c.handle(ctx, n)
	if err == nil {
		metrics.InterruptionNotices.WithLabelValues(string(n.Kind), outcome).Inc()
	}
	return err
}

func (c *Controller) handle(ctx context.Context, n cloud.Interruption) (string, error) {
	logger := klog.FromContext(ctx).WithValues("kind", n.Kind, "providerID", n.ProviderID)
	defer c.locks.lock(n.ProviderID)()
	notice, removing := n.ProviderID+"|"+string(n.Kind), n.ProviderID+"|removing"
	if _, ok := c.acted.Get(notice); ok {
		logger.V(2).Info("Interruption notice acted on already; ignoring the copy")
		return OutcomeDuplicate, nil
	}
	claim, err := c.claimOf(ctx, n.ProviderID)
	if err != nil {
		return "", err
	}
	if claim == nil {
		logger.Info("Interruption notice for an instance that is no NodeClaim's; ignoring")
		return OutcomeUnknown, nil
	}
	msg := Describe(n, claim)
	if n.Kind == cloud.InterruptionRebalance {
		logger.Info("Rebalance recommendation; the node stays", "nodeClaim", claim.Name)
		c.record(claim, corev1.EventTypeNormal, EventReason(n.Kind), msg)
		c.acted.Set(notice, struct{}{}, rememberFor)
		return OutcomeRecorded, nil
	}
	if _, ok := c.acted.Get(removing); ok || claim.DeletionTimestamp != nil {
		c.acted.Set(notice, struct{}{}, rememberFor)
		return OutcomeAlreadyRemoving, nil
	}
	// Karpenter writes the notice's Event, then TerminatingOnInterruption as it deletes the
	// NodeClaim; so does Tailor, the second through the forceful path.
	c.record(claim, corev1.EventTypeWarning, EventReason(n.Kind), msg)
	if err := c.opts.Disrupter.Disrupt(ctx, claim, forceful.Reason{Method: Method, Event: TerminatingOnInterruption,
		Message: "Interruption triggered termination: " + msg}); err != nil {
		return "", err
	}
	c.acted.Set(notice, struct{}{}, rememberFor)
	c.acted.Set(removing, struct{}{}, rememberFor)
	return OutcomeDisrupted, nil
}

// Resume finishes the interruptions a previous process left half done; run it once at start,
// with the informers synced. The forceful path taints the node and records DisruptionReason
// Interrupted before it deletes the NodeClaim; a process stopped between the two leaves a node
// that is tainted, whose pods the provisioner plans capacity for at once (the node is leaving),
// and that nothing drains until the queue delivers the notice again, a visibility timeout later:
// the capacity launched for its pods comes up and waits, unused, and the instance may be gone
// before the drain starts. The recorded reason is the notice's decision, so it is carried out
// now. Expiration and repair need no such step: their controllers look at every claim again as
// they start.
func (c *Controller) Resume(ctx context.Context) {
	claims, err := c.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing NodeClaims to finish interruptions a previous process left half done")
		return
	}
	for _, claim := range claims {
		cond := claim.GetCondition(karpv1.ConditionTypeDisruptionReason)
		if claim.DeletionTimestamp != nil || cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != Method || claim.Status.ProviderID == "" {
			continue
		}
		logger := klog.FromContext(ctx).WithValues("nodeClaim", claim.Name, "providerID", claim.Status.ProviderID)
		logger.Info("Finishing an interruption a previous process left half done")
		unlock := c.locks.lock(claim.Status.ProviderID)
		err := c.opts.Disrupter.Disrupt(ctx, claim, forceful.Reason{Method: Method, Event: Method, Message: cond.Message})
		if err == nil {
			// A copy of the notice delivered again now finds the node being removed.
			c.acted.Set(claim.Status.ProviderID+"|removing", struct{}{}, rememberFor)
		}
		unlock()
		if err != nil {
			logger.Error(err, "Could not finish an interruption a previous process left half done; its notice, delivered again, will")
		}
	}
}

// claimOf finds the NodeClaim of the instance: from the cache, or from the API server when the
// cache does not know it yet (a claim launched a moment ago must not miss its notice).
func (c *Controller) claimOf(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	cached, err := c.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, claim := range cached {
		if claim.Status.ProviderID == providerID {
			return claim, nil
		}
	}
	claims, err := c.opts.NodeClaims.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing NodeClaims to find instance %s: %w", providerID, err)
	}
	for i := range claims.Items {
		if claim := &claims.Items[i]; claim.Status.ProviderID == providerID {
			return claim, nil
		}
	}
	return nil, nil
}

// TerminatingOnInterruption is the reason of the Event written as a notice's NodeClaim is deleted,
// Karpenter's.
const TerminatingOnInterruption = "TerminatingOnInterruption"

// EventReason is the reason of a notice's Event: Karpenter's AWS provider's for the same notice,
// so that alerts on them keep working. A scheduled change is an unhealthy instance to Karpenter.
func EventReason(k cloud.InterruptionKind) string {
	switch k {
	case cloud.InterruptionSpot:
		return "SpotInterrupted"
	case cloud.InterruptionRebalance:
		return "SpotRebalanceRecommendation"
	case cloud.InterruptionScheduledChange:
		return "InstanceUnhealthy"
	case cloud.InterruptionStopping:
		return "InstanceStopping"
	case cloud.InterruptionTerminating:
		return "InstanceTerminating"
	case cloud.InterruptionCapacityReservation:
		return "CapacityReservationInstanceInterrupted"
	}
	return string(k)
}

// Describe is the message of a notice's Events: what, for which instance, and by when.
func Describe(n cloud.Interruption, claim *karpv1.NodeClaim) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s for instance %s of NodeClaim %s", kindText(n.Kind), n.ProviderID, claim.Name)
	if claim.Status.NodeName != "" {
		fmt.Fprintf(&b, " (Node %s)", claim.Status.NodeName)
	}
	if !n.Deadline.IsZero() {
		fmt.Fprintf(&b, "; deadline %s", n.Deadline.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if n.Kind != cloud.InterruptionRebalance {
		b.WriteString("; replacing the node")
	}
	return b.String()
}

func kindText(k cloud.InterruptionKind) string {
	switch k {
	case cloud.InterruptionSpot:
		return "Spot interruption"
	case cloud.InterruptionRebalance:
		return "Rebalance recommendation (elevated risk of spot interruption)"
	case cloud.InterruptionScheduledChange:
		return "Scheduled maintenance"
	case cloud.InterruptionStopping:
		return "Instance stopping"
	case cloud.InterruptionTerminating:
		return "Instance terminating"
	case cloud.InterruptionCapacityReservation:
		return "Capacity reservation reclaimed"
	}
	return string(k)
}

// record writes the Event on the NodeClaim and on its Node.
func (c *Controller) record(claim *karpv1.NodeClaim, eventType, reason, msg string) {
	if c.opts.Recorder == nil {
		return
	}
	c.opts.Recorder.Eventf(apis.ForEvents(claim), nil, eventType, reason, "Interruption", "%s", msg)
	if claim.Status.NodeName == "" {
		return
	}
	if node, err := c.opts.Nodes.Get(claim.Status.NodeName); err == nil {
		c.opts.Recorder.Eventf(node, nil, eventType, reason, "Interruption", "%s", msg)
	}
}
