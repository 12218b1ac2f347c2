package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/lifecycle/repair"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestNodeRepair, on the AWS provider with nodeRepair on: of three nodes, two stop reporting
// Ready. Past the 30-minute toleration neither is repaired, because two of three is more than 20%
// of the NodePool: each gets a NodeRepairBlocked Event. Once one of them recovers, the other is
// replaced, forcefully: its NodeClaim and instance go, with an Unhealthy Event naming the
// condition, and its pod runs on a new node.
func TestNodeRepair(t *testing.T) {
	e := env.NewAWSWith(t, env.AWSCluster, emulator.Region, map[string]any{"nodeRepair": true})
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(env.NodePool("default"))
	web := env.DeploymentOf("web", 3, "100m", "128Mi")
	// One pod per node, so that three nodes come up and each broken node strands a pod.
	web.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: corev1.LabelHostname}}}}
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=web", 3, 2*time.Minute)
	broken, recovering := pods[0].Spec.NodeName, pods[1].Spec.NodeName
	brokenNode, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, broken, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := e.ClaimOfNode(brokenNode)
	setReady(e.Env, broken, corev1.ConditionFalse)
	setReady(e.Env, recovering, corev1.ConditionFalse)

	e.Clock.Step(31 * time.Minute)
	for _, name := range []string{broken, recovering} {
		e.WaitFor("a NodeRepairBlocked Event on node "+name, 30*time.Second, func() (bool, string) {
			evs := e.EventsFor(repair.BlockedReason, "Node")
			return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool {
				return ev.Regarding.Name == name && strings.Contains(ev.Note, "2 of NodePool default's 3 nodes are unhealthy, more than 20%")
			}), fmt.Sprint(env.Notes(evs))
		})
	}
	for _, name := range []string{broken, recovering} {
		n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil || n.DeletionTimestamp != nil {
			t.Fatalf("node %s was removed while the NodePool's guard should hold: %v", name, err)
		}
	}

	setReady(e.Env, recovering, corev1.ConditionTrue)
	e.WaitNodeGone(broken, 2*time.Minute)
	pods = e.WaitRunning("app=web", 3, 2*time.Minute)
	for _, p := range pods {
		if p.Spec.NodeName == broken {
			t.Fatalf("pod %s still on the repaired node", p.Name)
		}
	}
	e.WaitFor("an Unhealthy Event on NodeClaim "+claim.Name, 10*time.Second, func() (bool, string) {
		evs := e.EventsFor(repair.Method, "NodeClaim")
		return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool {
			return ev.Regarding.Name == claim.Name && strings.Contains(ev.Note, "condition Ready has been False") &&
				strings.Contains(ev.Note, "longer than the 30m0s the repair policy tolerates")
		}), fmt.Sprint(env.Notes(evs))
	})
	for _, inst := range e.Emu.Instances() {
		if inst.ProviderID() == claim.Status.ProviderID && inst.State != "terminated" {
			t.Errorf("the repaired node's instance %s is %s", inst.ID, inst.State)
		}
	}
	if _, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, recovering, metav1.GetOptions{}); err != nil {
		t.Errorf("the node that recovered went too: %v", err)
	}
	if got := testutil.ToFloat64(metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues("Ready", "default", claim.Labels[karpv1.CapacityTypeLabelKey])); got < 1 {
		t.Errorf("tailor_nodeclaims_unhealthy_disrupted_total{condition=Ready} = %v, want at least 1", got)
	}
}

// setReady plays a kubelet that stops (False) or resumes (True) reporting Ready. kwok keeps the
// nodes it manages Ready, so a broken node is first taken from it; a recovered one is given back.
func setReady(e *env.Env, name string, status corev1.ConditionStatus) {
	e.T.Helper()
	annotation := "null"
	if status == corev1.ConditionTrue {
		annotation = `"fake"`
	}
	key, _, _ := strings.Cut(sandbox.KwokNodeAnnotation, "=")
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, annotation)
	if status != corev1.ConditionTrue {
		if _, err := e.Cluster.Kube.CoreV1().Nodes().Patch(e.Ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			e.T.Fatalf("taking node %s from kwok: %v", name, err)
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		for i, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				c.Status, c.LastTransitionTime, c.LastHeartbeatTime = status, now, now
				c.Reason, c.Message = "KubeletReady", "kubelet is posting ready status"
				if status != corev1.ConditionTrue {
					c.Reason, c.Message = "KubeletNotReady", "container runtime is down"
				}
				n.Status.Conditions[i] = c
			}
		}
		_, err = e.Cluster.Kube.CoreV1().Nodes().UpdateStatus(e.Ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.T.Fatalf("setting node %s Ready=%s: %v", name, status, err)
	}
	if status == corev1.ConditionTrue {
		if _, err := e.Cluster.Kube.CoreV1().Nodes().Patch(e.Ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			e.T.Fatalf("giving node %s back to kwok: %v", name, err)
		}
	}
}
