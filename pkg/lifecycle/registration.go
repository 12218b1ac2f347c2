package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// register adopts the Node that joined for the claim's instance: it syncs the claim's labels and
// taints onto it and lifts karpenter.sh/unregistered, so pods may land. A node is often Ready by
// the time it registers: it is then initialized in the same pass, so that the Node is patched
// once and the claim's status written once for both, as Karpenter's lifecycle writes what all its
// steps found in one patch.
func (c *Controller) register(ctx context.Context, claim *karpv1.NodeClaim) (time.Duration, error) {
	node, err := c.nodeForClaim(claim)
	if err != nil || node == nil {
		// The Node's arrival brings the claim back through the queue.
		return 0, err
	}
	var initialized bool
	var recheck time.Duration
	err = controller.WriteLiveNode(ctx, c.opts.Kube, node, nodeConflictRetry, func(node *corev1.Node) error {
		labels := map[string]string{}
		for k, v := range claim.Labels {
			labels[k] = v
		}
		labels[karpv1.NodeRegisteredLabelKey] = "true"
		taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == karpv1.UnregisteredTaintKey })
		taints = scheduling.WithTaints(taints, claim.Spec.Taints)
		finalizers := node.Finalizers
		if !hasFinalizer(finalizers, karpv1.TerminationFinalizer) {
			// From now on deleting the node drains it and terminates its instance first.
			finalizers = append(slices.Clone(finalizers), karpv1.TerminationFinalizer)
		}
		// The lift of the unregistered taint and the claim's own taints leave the startup taints,
		// readiness and resources alone: the node as it is answers for initialization.
		initialized, _, recheck = c.initialization(claim, node)
		if initialized {
			labels[karpv1.NodeInitializedLabelKey] = "true"
		}
		return c.patchNode(ctx, node, labels, taints, finalizers)
	})
	if err != nil {
		return 0, fmt.Errorf("registering Node %s for NodeClaim %s: %w", node.Name, claim.Name, err)
	}
	claim.Status.NodeName = node.Name
	claim.SetCondition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered",
		fmt.Sprintf("Node %s joined", node.Name), c.opts.Clock.Now())
	updated, err := c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return 0, err
	}
	c.metrics().Registered(updated)
	klog.FromContext(ctx).Info("Registered NodeClaim", "nodeClaim", claim.Name, "node", node.Name)
	if initialized {
		c.metrics().Initialized(updated)
		klog.FromContext(ctx).Info("Initialized NodeClaim", "nodeClaim", claim.Name, "node", node.Name)
	}
	return recheck, nil
}

// initialize marks the claim Initialized once its node is Ready, its startup taints are gone and
// every extended resource it was launched for is registered.
func (c *Controller) initialize(ctx context.Context, claim *karpv1.NodeClaim) (time.Duration, error) {
	node, err := c.nodeForClaim(claim)
	if err != nil || node == nil {
		return 0, err
	}
	initialized, changed, recheck := c.initialization(claim, node)
	if !initialized {
		if changed { // a new reason why not: say it
			_, err := c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
			return recheck, err
		}
		return recheck, nil
	}
	labels := map[string]string{karpv1.NodeInitializedLabelKey: "true"}
	if err := c.patchNode(ctx, node, labels, nil, nil); err != nil {
		return 0, err
	}
	updated, err := c.opts.NodeClaims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return 0, err
	}
	c.metrics().Initialized(updated)
	klog.FromContext(ctx).Info("Initialized NodeClaim", "nodeClaim", claim.Name, "node", node.Name)
	return 0, nil
}

// initialization sets the claim's Initialized condition from its node, in the claim only: True
// once the node is initialized, else Unknown with why not, as Karpenter leaves it while a node
// boots (Unknown, not False: a booting node has not failed, and neither Initialized nor Ready
// writes an Event for it). It returns whether the node is initialized, whether the condition
// changed, and when to look again if the node is not initialized.
func (c *Controller) initialization(claim *karpv1.NodeClaim, node *corev1.Node) (initialized, changed bool, recheck time.Duration) {
	dra := draDevices{c.opts.DeviceClasses, c.opts.ResourceSlices}
	if why := notInitialized(node, claim, dra); why != "" {
		changed = claim.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, "NotInitialized", why, c.opts.Clock.Now())
		// No event of the node's tells when a driver publishes its devices: look again.
		return false, changed, dra.recheck(claim)
	}
	changed = claim.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", c.opts.Clock.Now())
	return true, changed, 0
}

func notInitialized(node *corev1.Node, claim *karpv1.NodeClaim, dra draDevices) string {
	if !nodeutil.IsNodeReady(node) {
		return fmt.Sprintf("Node %s is not Ready", node.Name)
	}
	for _, st := range claim.Spec.StartupTaints {
		if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&st) }) {
			return fmt.Sprintf("startup taint %s is still on Node %s", st.ToString(), node.Name)
		}
	}
	for name, q := range claim.Status.Capacity {
		if !isExtended(name) || q.IsZero() {
			continue
		}
		if have, ok := node.Status.Allocatable[name]; ok && !have.IsZero() {
			continue
		}
		if class := dra.backing(name); class != "" {
			if dra.published(node.Name) {
				continue
			}
			return fmt.Sprintf("resource %s (the DRA devices of DeviceClass %s) is not published for Node %s", name, class, node.Name)
		}
		return fmt.Sprintf("resource %s is not registered on Node %s", name, node.Name)
	}
	return ""
}

func isExtended(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		return false
	}
	return true
}

// nodeConflictRetry is how registration writes its node again after a conflict
// (controller.WriteLiveNode): three tries in all, 10 ms apart. Each holds one of the controller's
// workers, and the queue's backoff takes over after them.
var nodeConflictRetry = wait.Backoff{Steps: 3, Duration: 10 * time.Millisecond, Factor: 1, Jitter: 0.1}

// patchNode merges labels into the node and, when taints or finalizers are not nil, replaces
// them. A patch that replaces them carries the node's resource version, so that a concurrent
// change to them is not overwritten; one that only merges labels overwrites nothing, and needs
// none (the kubelet's status writes would only make it conflict).
func (c *Controller) patchNode(ctx context.Context, node *corev1.Node, labels map[string]string, taints []corev1.Taint, finalizers []string) error {
	meta := map[string]any{"labels": labels}
	if taints != nil || finalizers != nil {
		meta["resourceVersion"] = node.ResourceVersion
	}
	if finalizers != nil {
		meta["finalizers"] = finalizers
	}
	patch := map[string]any{"metadata": meta}
	if taints != nil {
		patch["spec"] = map[string]any{"taints": taints}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.opts.Kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, data, metav1.PatchOptions{})
	return err
}
