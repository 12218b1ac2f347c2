package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// attachedVolumes returns the VolumeAttachments that still name node and that the instance's
// termination waits for. As Karpenter's termination does (filterVolumeAttachments), it leaves out
// the volumes of pods the drain does not wait for: a pod that tolerates karpenter.sh/disrupted, a
// mirror pod, or a pod stuck terminating keeps its volumes mounted until the instance goes, and
// waiting for them to detach would hold the node until its terminationGracePeriod, or for ever
// without one. pods are the pods on node.
func (c *Controller) attachedVolumes(node string, pods []*corev1.Pod, now time.Time) []string {
	vas, err := c.opts.VolumeAttachments.List(labels.Everything())
	if err != nil {
		return nil
	}
	kept := c.volumesKept(pods, now)
	var out []string
	for _, va := range vas {
		if va.Spec.NodeName != node {
			continue
		}
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil && kept.Has(*pv) {
			continue
		}
		out = append(out, va.Name)
	}
	return out
}

// volumesKept returns the PersistentVolumes of the pods among pods that the drain does not wait
// for, through their claims (a PersistentVolumeClaim volume, or an ephemeral one's generated
// claim); a claim the lister does not have, or one not bound yet, names none.
func (c *Controller) volumesKept(pods []*corev1.Pod, now time.Time) sets.Set[string] {
	kept := sets.New[string]()
	if c.opts.PVCs == nil {
		return kept
	}
	for _, p := range pods {
		if !drainSkips(p, now) {
			continue
		}
		for _, v := range p.Spec.Volumes {
			claim := ""
			switch {
			case v.PersistentVolumeClaim != nil:
				claim = v.PersistentVolumeClaim.ClaimName
			case v.Ephemeral != nil:
				claim = ephemeral.VolumeClaimName(p, &v)
			default:
				continue
			}
			pvc, err := c.opts.PVCs.PersistentVolumeClaims(p.Namespace).Get(claim)
			if err != nil || pvc.Spec.VolumeName == "" {
				continue
			}
			kept.Insert(pvc.Spec.VolumeName)
		}
	}
	return kept
}

// drainSkips reports whether the drain does not wait for p to go (Karpenter's !IsDrainable): it
// tolerates karpenter.sh/disrupted, is a mirror pod, or is stuck terminating.
func drainSkips(p *corev1.Pod, now time.Time) bool {
	return scheduling.ToleratesDisrupted(p) || scheduling.IsMirror(p) || stuckTerminating(p, now)
}
