package termination

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// grantedEviction reports whether a PodDisruptionBudget of the pod's namespace already counts
// this pod as disrupted, by its status.disruptedPods, while the pod is not being deleted. The
// Eviction API debits the budget (and names the pod there) before it deletes the pod; when the
// caller is killed between the two, as a restart of Tailor mid-drain does, the pod stays, the
// budget allows nothing more, and every drain under it would wait the two minutes until the
// disruption controller drops the entry. Deleting that pod finishes the eviction the budget
// already granted, so no more pods are down than the budget allows.
//
// The entry must be newer than the pod: a StatefulSet pod recreated under the name of one that
// was evicted is not the pod the budget granted.
func grantedEviction(pod *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, pdb := range pdbs {
		if pdb.Namespace != pod.Namespace {
			continue
		}
		if at, ok := pdb.Status.DisruptedPods[pod.Name]; ok && !at.Time.Before(pod.CreationTimestamp.Time) {
			return true
		}
	}
	return false
}
