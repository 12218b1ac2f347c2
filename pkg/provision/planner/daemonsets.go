package planner

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/provision/planner/daemons"
)

// DaemonSetPods returns the pod each DaemonSet would run on a new node (daemons.PodsForNewNodes);
// it stays here because the planner's callers build Input.DaemonSets with it.
func DaemonSetPods(dss []*appsv1.DaemonSet) []*corev1.Pod { return daemons.PodsForNewNodes(dss) }
