package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// NeedsEviction reports whether draining a node must evict pod: it is not finished, not already
// being deleted, not a mirror pod, and does not tolerate karpenter.sh/disrupted (a pod that does
// chose to stay until the node goes).
func NeedsEviction(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
		return false
	}
	return !IsMirror(p) && !ToleratesDisrupted(p)
}

// ToleratesDisrupted reports whether p tolerates karpenter.sh/disrupted:NoSchedule: it chose to
// stay on its node until the node goes, and no drain evicts it.
func ToleratesDisrupted(p *corev1.Pod) bool {
	taint := karpv1.DisruptedNoScheduleTaint
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, &taint, true)
}

// PodGroupOf returns the name of the PodGroup the pod belongs to (spec.schedulingGroup's
// podGroupName, in the pod's namespace), or false when it belongs to none. The provisioner reads
// the gang policy of that PodGroup, and consolidation leaves the nodes of its pods alone.
func PodGroupOf(p *corev1.Pod) (string, bool) {
	if g := p.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName, true
	}
	return "", false
}

// IsMirror reports whether pod is the API server's mirror of a static pod.
func IsMirror(p *corev1.Pod) bool {
	_, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]
	return mirror
}

// IsDaemonSetPod reports whether a DaemonSet controls pod: it goes where its node goes, so no
// capacity is planned for it elsewhere.
func IsDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}
