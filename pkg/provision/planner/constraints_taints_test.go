package planner

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

const dedicated = "example.com/dedicated"

func tolerating(tol corev1.Toleration) podOpt {
	return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, tol) }
}

func tainted(taints ...corev1.Taint) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, taints...)
	}
}

// TestConstraintTaints: a NodePool's taints keep off the pods that do not tolerate them, by the
// TaintToleration plugin's rules (NoSchedule and NoExecute refuse, PreferNoSchedule does not;
// tolerations match by key, value and effect). TestPlanTaints covers the plain NoSchedule case.
func TestConstraintTaints(t *testing.T) {
	noSchedule := corev1.Taint{Key: dedicated, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: dedicated, Value: "gpu", Effect: corev1.TaintEffectNoExecute}
	prefer := corev1.Taint{Key: dedicated, Value: "gpu", Effect: corev1.TaintEffectPreferNoSchedule}
	other := corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name   string
		taints []corev1.Taint
		tol    []corev1.Toleration
		// refused is the taint the reason must name; "" when the pod is placed.
		refused string
	}{
		{name: "NoExecute, not tolerated", taints: []corev1.Taint{noExecute}, refused: noExecute.ToString()},
		{name: "PreferNoSchedule does not refuse", taints: []corev1.Taint{prefer}},
		{name: "Equal, same value", taints: []corev1.Taint{noSchedule},
			tol: []corev1.Toleration{{Key: dedicated, Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		{name: "Equal, other value", taints: []corev1.Taint{noSchedule},
			tol: []corev1.Toleration{{Key: dedicated, Operator: corev1.TolerationOpEqual, Value: "cpu"}}, refused: noSchedule.ToString()},
		{name: "other effect", taints: []corev1.Taint{noSchedule},
			tol: []corev1.Toleration{{Key: dedicated, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}, refused: noSchedule.ToString()},
		{name: "empty key tolerates everything", taints: []corev1.Taint{noSchedule, other},
			tol: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		{name: "one of two taints tolerated", taints: []corev1.Taint{noSchedule, other},
			tol: []corev1.Toleration{{Key: dedicated, Operator: corev1.TolerationOpExists}}, refused: other.ToString()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", "1", "2Gi")
			pod.Spec.Tolerations = tc.tol
			in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{newPool("tainted", tainted(tc.taints...))}}
			plan := testPlanner(t).Plan(context.Background(), in)
			if tc.refused != "" {
				if len(plan.Claims) != 0 {
					t.Fatalf("want the pod unplaceable; got %s", summary(plan))
				}
				reasonContains(t, plan, pod, "the pod does not tolerate the NodePool's taint "+tc.refused)
				return
			}
			pc := onlyClaim(t, plan, pod)
			if claim := nodeclaim.New(pc); !slices.Equal(claim.Spec.Taints, tc.taints) {
				t.Errorf("NodeClaim taints %v, want the NodePool's %v", claim.Spec.Taints, tc.taints)
			}
			sameOptions(t, pc, []*corev1.Pod{pod}, anyOffering)
			verifyPlan(t, sim, in, plan)
		})
	}
}

// TestConstraintTaintedPoolFallback: pods that tolerate a heavier NodePool's taint go there, the
// others to the next NodePool, in one plan.
func TestConstraintTaintedPoolFallback(t *testing.T) {
	tolerant := newPod("tolerant", "2", "2Gi", tolerates(dedicated))
	plain := newPod("plain", "1", "2Gi")
	in := Input{Pending: []*corev1.Pod{tolerant, plain}, Pools: []Pool{newPool("dedicated", weighted(50), taint(dedicated)), newPool("general")}}
	plan := testPlanner(t).Plan(context.Background(), in)
	placedOnce(t, plan, in.Pending)
	got := map[string]string{}
	for _, pc := range plan.Claims {
		for _, p := range pc.Pods {
			got[p.Name] = pc.NodePool.Name
		}
	}
	if got["tolerant"] != "dedicated" || got["plain"] != "general" {
		t.Errorf("pods went to NodePools %v; want tolerant on dedicated, plain on general", got)
	}
	verifyPlan(t, sim, in, plan)
}

// TestConstraintStartupTaints: a NodePool's startup taints go on the NodeClaim, but pods need not
// tolerate them: they are lifted once the node is initialized.
func TestConstraintStartupTaints(t *testing.T) {
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	pool := newPool("default")
	pool.NodePool.Spec.Template.Spec.StartupTaints = []corev1.Taint{startup}
	pod := newPod("p", "1", "2Gi")
	in := Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}}
	plan := testPlanner(t).Plan(context.Background(), in)
	pc := onlyClaim(t, plan, pod)
	claim := nodeclaim.New(pc)
	if !slices.Equal(claim.Spec.StartupTaints, []corev1.Taint{startup}) || len(claim.Spec.Taints) != 0 {
		t.Errorf("NodeClaim taints %v, startup taints %v; want only the startup taint", claim.Spec.Taints, claim.Spec.StartupTaints)
	}
	sameOptions(t, pc, []*corev1.Pod{pod}, anyOffering)
	verifyPlan(t, sim, in, plan)
}

func hostPort(port int32, protocol corev1.Protocol, ip string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports,
			corev1.ContainerPort{ContainerPort: 80, HostPort: port, Protocol: protocol, HostIP: ip})
	}
}

// TestConstraintHostPorts: two pods that want the same host port (same protocol, overlapping host
// IPs) never share a claim; others do.
func TestConstraintHostPorts(t *testing.T) {
	cases := []struct {
		name  string
		ports []podOpt
		// claims are the pods of each claim, in the order they open.
		claims []string
	}{
		{name: "same port", ports: []podOpt{hostPort(8080, corev1.ProtocolTCP, ""), hostPort(8080, corev1.ProtocolTCP, ""), hostPort(8080, corev1.ProtocolTCP, "")},
			claims: []string{"p0", "p1", "p2"}},
		{name: "other ports", ports: []podOpt{hostPort(8080, corev1.ProtocolTCP, ""), hostPort(8081, corev1.ProtocolTCP, ""), hostPort(8082, corev1.ProtocolTCP, "")},
			claims: []string{"p0+p1+p2"}},
		{name: "other protocol", ports: []podOpt{hostPort(53, corev1.ProtocolTCP, ""), hostPort(53, corev1.ProtocolUDP, "")},
			claims: []string{"p0+p1"}},
		{name: "other host IPs", ports: []podOpt{hostPort(8080, corev1.ProtocolTCP, "10.0.0.1"), hostPort(8080, corev1.ProtocolTCP, "10.0.0.2")},
			claims: []string{"p0+p1"}},
		{name: "a host IP and every IP", ports: []podOpt{hostPort(8080, corev1.ProtocolTCP, "10.0.0.1"), hostPort(8080, corev1.ProtocolTCP, "0.0.0.0")},
			claims: []string{"p0", "p1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pending []*corev1.Pod
			for i, port := range tc.ports {
				pending = append(pending, newPod(fmt.Sprintf("p%d", i), "1", "1Gi", port))
			}
			in := Input{Pending: pending, Pools: []Pool{newPool("default")}}
			plan := testPlanner(t).Plan(context.Background(), in)
			placedOnce(t, plan, pending)
			if got := claimNames(plan); !slices.Equal(got, tc.claims) {
				t.Errorf("claims hold %v, want %v", got, tc.claims)
			}
			verifyPlan(t, sim, in, plan)
		})
	}

	t.Run("port taken on an existing node", func(t *testing.T) {
		node := readyNode("existing", "8", "16Gi")
		running := clusterview.OnNode(newPod("running", "1", "1Gi", hostPort(8080, corev1.ProtocolTCP, "")), "existing")
		same := newPod("same-port", "1", "1Gi", hostPort(8080, corev1.ProtocolTCP, ""))
		free := newPod("no-port", "1", "1Gi")
		in := Input{Pending: []*corev1.Pod{same, free}, Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{running}, Pools: []Pool{newPool("default")}}
		plan := testPlanner(t).Plan(context.Background(), in)
		if len(plan.FitsExisting) != 1 || plan.FitsExisting[0] != free || !slices.Equal(claimNames(plan), []string{"same-port"}) {
			t.Fatalf("want no-port on the existing node and same-port on a new claim; got %s", summary(plan))
		}
		verifyPlan(t, sim, in, plan)
	})
}
