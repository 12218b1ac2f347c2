package provision

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// forgetHeadings drops the plans that sent the pods where Ungrounded found the scheduler would
// refuse them, and the nominations Tailor wrote there: the plan they are part of now decides
// where they go. A nomination left in place would count the pod there again at the next plan,
// undoing whatever this one decides, and keep the scheduler holding room for it there. A pod
// the scheduler holds reserved meanwhile (a gang's, waiting at Permit) gets no forgotten plan
// back when it is unreserved.
func (p *Provisioner) forgetHeadings(ctx context.Context, pods []*corev1.Pod) {
	p.mu.Lock()
	for _, pod := range pods {
		delete(p.planned, pod.UID)
		delete(p.reserved, pod.UID)
	}
	p.mu.Unlock()
	p.dropNominations(ctx, pods)
}
