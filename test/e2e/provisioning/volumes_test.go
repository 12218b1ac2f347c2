package provisioning

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestStatefulSetKeepsItsZone: a StatefulSet's pods get EBS volumes in the zones the scheduler
// first put them. When the node of one of them is deleted, its pod comes back Pending with a
// volume that only its zone can mount, and the zones that have room refuse it: Tailor has to
// launch in the volume's zone, and the pod binds there.
func TestStatefulSetKeepsItsZone(t *testing.T) {
	e := env.NewAWS(t)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{"testdata/zonal-volumes"}, nil); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=ledger", 3, 90*time.Second)
	zoneOf := map[string]string{} // pod → its volume's zone
	for _, p := range pods {
		zoneOf[p.Name] = expectVolumeBeside(e, p)
	}

	victim := pods[0]
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, victim.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := e.ClaimOfNode(node)
	if err := e.Cluster.Tailor.KarpenterV1().NodeClaims().Delete(e.Ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting NodeClaim %s: %v", claim.Name, err)
	}
	e.WaitFor(fmt.Sprintf("pod %s to run again on a node other than %s", victim.Name, node.Name), 2*time.Minute, func() (bool, string) {
		p, err := e.Cluster.Kube.CoreV1().Pods(victim.Namespace).Get(e.Ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName == "" || p.Spec.NodeName == node.Name || p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("on %q, %s", p.Spec.NodeName, p.Status.Phase)
		}
		return true, ""
	})
	for _, p := range e.WaitRunning("app=ledger", 3, 30*time.Second) {
		if got := expectVolumeBeside(e, p); got != zoneOf[p.Name] {
			t.Errorf("pod %s's volume is in %s now, was %s: the volume was not the one first provisioned", p.Name, got, zoneOf[p.Name])
		}
	}
}

// expectVolumeBeside checks that pod p's volume is bound and in the zone of p's node, and returns
// that zone.
func expectVolumeBeside(e *env.AWS, p corev1.Pod) string {
	e.T.Helper()
	claimName := "data-" + p.Name
	pvc, err := e.Cluster.Kube.CoreV1().PersistentVolumeClaims(p.Namespace).Get(e.Ctx, claimName, metav1.GetOptions{})
	if err != nil {
		e.T.Fatalf("pod %s's claim: %v", p.Name, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		e.T.Fatalf("claim %s is %s (volume %q) while its pod runs", claimName, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	pv, err := e.Cluster.Kube.CoreV1().PersistentVolumes().Get(e.Ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || len(terms[0].MatchExpressions[0].Values) != 1 {
		e.T.Fatalf("volume %s's node affinity is %v, want one zone", pv.Name, terms)
	}
	zone := terms[0].MatchExpressions[0].Values[0]
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	if got := node.Labels[corev1.LabelTopologyZone]; got != zone {
		e.T.Fatalf("pod %s runs on %s in %s, its volume %s is in %s", p.Name, node.Name, got, pv.Name, zone)
	}
	return zone
}
