package provision

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// nominate keeps status.nominatedNodeName (KEP-5278) in step with the plans: a pod planned onto a
// launching NodeClaim whose node name is known is nominated to that node, so the scheduler keeps
// its room against pods of equal or lower priority; a pod nominated to a node that will never
// come (its claim is gone) has the nomination cleared, so it is planned and scheduled afresh.
// Only nominations to names that are neither a Node nor a live claim's node are cleared: the
// scheduler's own nominations always name existing nodes.
func (p *Provisioner) nominate(ctx context.Context, nodes []*corev1.Node, pods []*corev1.Pod, claims []*karpv1.NodeClaim) {
	target := map[string]string{} // claim name -> node name, for claims still launching
	futureNodes := map[string]bool{}
	for _, c := range claims {
		if c.DeletionTimestamp == nil && c.Status.NodeName != "" {
			futureNodes[c.Status.NodeName] = true
			if !c.IsTrue(karpv1.ConditionTypeInitialized) {
				target[c.Name] = c.Status.NodeName
			}
		}
	}
	for _, n := range nodes {
		futureNodes[n.Name] = true
	}
	p.mu.Lock()
	planned := make(map[types.UID]string, len(p.planned))
	for uid, claim := range p.planned {
		planned[uid] = claim
	}
	p.mu.Unlock()
	for _, pod := range pods {
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			continue
		}
		want := target[planned[pod.UID]]
		switch {
		case want != "" && pod.Status.NominatedNodeName == "":
			p.setNomination(ctx, pod, want)
		case want == "" && pod.Status.NominatedNodeName != "" && !futureNodes[pod.Status.NominatedNodeName]:
			p.setNomination(ctx, pod, "")
		}
	}
}

func (p *Provisioner) setNomination(ctx context.Context, pod *corev1.Pod, node string) {
	var value any = node
	if node == "" {
		value = nil
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": value}})
	_, err := p.opts.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	logger := klog.FromContext(ctx)
	switch {
	case err == nil && node != "":
		logger.V(2).Info("Nominated pod to a launching node", "pod", klog.KObj(pod), "node", node)
	case err == nil:
		logger.V(2).Info("Cleared a nomination to a node that will not come", "pod", klog.KObj(pod), "node", pod.Status.NominatedNodeName)
	case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
		logger.Error(err, "Updating the pod's nominated node", "pod", klog.KObj(pod), "node", node)
	}
}
