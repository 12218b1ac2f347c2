// Package forceful removes a node that must go whatever the budgets say: its instance is being
// interrupted, its NodeClaim has expired, or it has been unhealthy too long. It is the path that
// interruption, expiration and repair share: taint the node, have capacity for its pods planned, then delete the NodeClaim and let
// the termination path drain the node through the Eviction API.
package forceful

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Claims is what a Disrupter writes of NodeClaims; the generated NodeClaim client is one. It is
// this narrow so that a test can record the order of the writes.
type Claims interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*karpv1.NodeClaim, error)
	UpdateStatus(ctx context.Context, claim *karpv1.NodeClaim, opts metav1.UpdateOptions) (*karpv1.NodeClaim, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

var _ Claims = karpclient.NodeClaimInterface(nil)

// Options are what a Disrupter reads and writes.
type Options struct {
	Kube       kubernetes.Interface
	NodeClaims Claims
	Nodes      corelisters.NodeLister
	Pods       corelisters.PodLister
	// Recorder may be nil, in which case no Events are written.
	Recorder events.EventRecorder
	Clock    clock.Clock
	// PlanNow plans capacity for pending pods and for the pods of nodes that are leaving, and
	// returns once that plan is made (the provisioner's PlanNow).
	PlanNow func(ctx context.Context) error
}

// Reason says why a node goes.
type Reason struct {
	// Method is the disruption reason of the shared metrics and of the NodeClaim's
	// DisruptionReason condition: Interrupted, Expired or Unhealthy.
	Method string
	// Event is the reason of the Events written on the Node and the NodeClaim, such as
	// SpotInterruption: the finer cause.
	Event string
	// Message says what happened, for the Events and the condition.
	Message string
}

// Disrupter carries out forceful disruptions.
type Disrupter struct{ opts Options }

// New returns a Disrupter.
func New(opts Options) *Disrupter { return &Disrupter{opts: opts} }

// planTimeout bounds the wait for the replacement plan: the node goes anyway, and its evicted
// pods are planned when they come back pending if this plan is late.
const planTimeout = 30 * time.Second

// Disrupt removes the claim's node. The order matters: the taint keeps new pods off and marks the
// node as leaving, which makes the provisioner plan its pods now, together, while they still
// run; only then is the NodeClaim deleted, which drains the node. A claim already being deleted
// is left alone, so a repeated notice does nothing twice; but an interruption of a claim already
// draining for another reason is recorded, since the drain must then stop holding evictions for
// want of a place: the cloud takes the instance whatever the drain does.
func (d *Disrupter) Disrupt(ctx context.Context, claim *karpv1.NodeClaim, why Reason) error {
	if claim.DeletionTimestamp != nil {
		if why.Method == InterruptedMethod && !isReason(claim, InterruptedMethod) {
			if err := d.setReason(ctx, claim.Name, why); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("setting the DisruptionReason of NodeClaim %s: %w", claim.Name, err)
			}
		}
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("nodeClaim", claim.Name, "reason", why.Event)
	node := d.nodeOf(claim)
	if node != nil {
		if err := d.taint(ctx, node); err != nil {
			return fmt.Errorf("tainting Node %s of NodeClaim %s %s: %w", node.Name, claim.Name, karpv1.DisruptedTaintKey, err)
		}
	}
	if err := d.setReason(ctx, claim.Name, why); err != nil {
		return fmt.Errorf("setting the DisruptionReason of NodeClaim %s: %w", claim.Name, err)
	}
	decision := "delete"
	if node != nil {
		if d.hasPodsToMove(node.Name) {
			decision = "replace"
		}
		planCtx, cancel := context.WithTimeout(ctx, planTimeout)
		if err := d.opts.PlanNow(planCtx); err != nil {
			logger.Error(err, "Planning capacity for the pods of a node that must go failed; draining it anyway", "node", node.Name)
		}
		cancel()
	}
	d.event(apis.ForEvents(claim), why)
	if node != nil {
		d.event(node, why)
	}
	logger.Info("Deleting NodeClaim", "node", claim.Status.NodeName, "decision", decision, "message", why.Message)
	if err := d.opts.NodeClaims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting NodeClaim %s: %w", claim.Name, err)
	}
	metrics.DisruptionDecisions.WithLabelValues(decision, methodOf(why.Method), why.Method, claim.Labels[karpv1.NodePoolLabelKey]).Inc()
	metrics.NodeClaimDisrupted(claim, why.Method, "")
	return nil
}

// setReason records why the claim goes, for the termination metrics and for people. It reads the
// claim afresh on a conflict (the lifecycle controller writes the same status), because an error
// here would delay the whole disruption until the notice is delivered again.
func (d *Disrupter) setReason(ctx context.Context, name string, why Reason) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claim, err := d.opts.NodeClaims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !claim.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, why.Method, why.Message, d.opts.Clock.Now()) {
			return nil
		}
		_, err = d.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		return err
	})
}

// nodeOf is the claim's Node, if it has registered.
func (d *Disrupter) nodeOf(claim *karpv1.NodeClaim) *corev1.Node {
	if claim.Status.NodeName == "" {
		return nil
	}
	node, err := d.opts.Nodes.Get(claim.Status.NodeName)
	if err != nil || node.Spec.ProviderID != claim.Status.ProviderID {
		return nil
	}
	return node
}

// taint puts karpenter.sh/disrupted:NoSchedule on the node and waits until the informers show
// it, because the plan that follows reads the node from them: a plan made from the untainted node
// would see no pods that need moving. A conflict (the kubelet's status heartbeats change the
// node's resourceVersion all the time) is retried at once from a fresh read, rather than failing
// the disruption: an interruption would otherwise wait for its notice to be delivered again.
func (d *Disrupter) taint(ctx context.Context, node *corev1.Node) error {
	err := controller.WriteLiveNode(ctx, d.opts.Kube, node, retry.DefaultRetry, func(node *corev1.Node) error {
		_, err := nodetaint.SetDisrupted(ctx, d.opts.Kube, node, true)
		return err
	})
	if err != nil {
		return err
	}
	nodetaint.WaitVisible(ctx, d.opts.Nodes, node.Name, true)
	return nil
}

// hasPodsToMove reports whether pods on the node will need room elsewhere once evicted.
func (d *Disrupter) hasPodsToMove(node string) bool {
	pods, err := d.opts.Pods.List(labels.Everything())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool {
		return p.Spec.NodeName == node && scheduling.NeedsEviction(p) && !scheduling.IsDaemonSetPod(p)
	})
}

func (d *Disrupter) event(regarding runtime.Object, why Reason) {
	if d.opts.Recorder != nil {
		d.opts.Recorder.Eventf(regarding, nil, corev1.EventTypeWarning, why.Event, "Disrupt", "%s", why.Message)
	}
}

// methodOf names the method behind a forceful reason, for the decisions metric.
func methodOf(reason string) string {
	switch reason {
	case "Interrupted":
		return "interruption"
	case "Expired":
		return "expiration"
	case "Unhealthy":
		return "repair"
	}
	return "forceful"
}

// InterruptedMethod is the DisruptionReason of a claim whose instance the cloud interrupts
// (interruption.Method); it lives here so that Disrupt can tell it from the others.
const InterruptedMethod = "Interrupted"

// isReason says whether the claim's DisruptionReason is already method.
func isReason(claim *karpv1.NodeClaim, method string) bool {
	c := claim.GetCondition(karpv1.ConditionTypeDisruptionReason)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == method
}
