package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// TestStatefulSetKeepsItsZone: a StatefulSet's pods get EBS volumes in the zones the scheduler
// first put them. When the node of one of them is deleted, its pod comes back Pending with a
// volume that only its zone can mount, and the zones that have room refuse it: Tailor has to
// launch in the volume's zone, and the pod binds there.
func TestStatefulSetKeepsItsZone(t *testing.T) {
	e := newAWSEnv(t)
	if err := sandbox.ApplyFiles(e.ctx, e.cluster.Config, []string{"testdata/zonal-volumes"}, nil); err != nil {
		t.Fatal(err)
	}
	pods := e.waitRunning("app=ledger", 3, 90*time.Second)
	zoneOf := map[string]string{} // pod → its volume's zone
	for _, p := range pods {
		zoneOf[p.Name] = e.expectVolumeBeside(p)
	}

	victim := pods[0]
	node, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, victim.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := e.claimOfNode(node)
	if err := e.cluster.Tailor.KarpenterV1().NodeClaims().Delete(e.ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting NodeClaim %s: %v", claim.Name, err)
	}
	e.waitFor(fmt.Sprintf("pod %s to run again on a node other than %s", victim.Name, node.Name), 2*time.Minute, func() (bool, string) {
		p, err := e.cluster.Kube.CoreV1().Pods(victim.Namespace).Get(e.ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName == "" || p.Spec.NodeName == node.Name || p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("on %q, %s", p.Spec.NodeName, p.Status.Phase)
		}
		return true, ""
	})
	for _, p := range e.waitRunning("app=ledger", 3, 30*time.Second) {
		if got := e.expectVolumeBeside(p); got != zoneOf[p.Name] {
			t.Errorf("pod %s's volume is in %s now, was %s: the volume was not the one first provisioned", p.Name, got, zoneOf[p.Name])
		}
	}
}

// expectVolumeBeside checks that pod p's volume is bound and in the zone of p's node, and returns
// that zone.
func (e *awsEnv) expectVolumeBeside(p corev1.Pod) string {
	e.t.Helper()
	claimName := "data-" + p.Name
	pvc, err := e.cluster.Kube.CoreV1().PersistentVolumeClaims(p.Namespace).Get(e.ctx, claimName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("pod %s's claim: %v", p.Name, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		e.t.Fatalf("claim %s is %s (volume %q) while its pod runs", claimName, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	pv, err := e.cluster.Kube.CoreV1().PersistentVolumes().Get(e.ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || len(terms[0].MatchExpressions[0].Values) != 1 {
		e.t.Fatalf("volume %s's node affinity is %v, want one zone", pv.Name, terms)
	}
	zone := terms[0].MatchExpressions[0].Values[0]
	node, err := e.cluster.Kube.CoreV1().Nodes().Get(e.ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if got := node.Labels[corev1.LabelTopologyZone]; got != zone {
		e.t.Fatalf("pod %s runs on %s in %s, its volume %s is in %s", p.Name, node.Name, got, pv.Name, zone)
	}
	return zone
}
