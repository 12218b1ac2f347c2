package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestSnakeIsKarpentersLabelValue(t *testing.T) {
	for in, want := range map[string]string{"Underutilized": "underutilized", "WhenEmptyOrUnderutilized": "when_empty_or_underutilized", "": ""} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestClusterGaugesFromListers checks the scrape-time gauges against a small cluster: a node of
// pool "default" with an app pod and a DaemonSet pod, an unmanaged node, a pending pod, a pool
// with limits and usage.
func TestClusterGaugesFromListers(t *testing.T) {
	yes := true
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)), Labels: map[string]string{
		karpv1.NodePoolLabelKey: "default", corev1.LabelTopologyZone: "zone-a", corev1.LabelArchStable: "amd64",
		karpv1.CapacityTypeLabelKey: "spot", corev1.LabelInstanceTypeStable: "m5.large"}},
		Status: corev1.NodeStatus{Capacity: res("2", "8Gi"), Allocatable: res("1900m", "7Gi")}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0", CreationTimestamp: metav1.NewTime(now)}, Status: corev1.NodeStatus{Allocatable: res("4", "16Gi")}}
	pod := func(name, nodeName, cpu string, ds bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(now.Add(-30 * time.Second))}, Spec: corev1.PodSpec{NodeName: nodeName,
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: res(cpu, "1Gi")}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if ds {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: &yes}}
		}
		if nodeName == "" {
			p.Status.Phase = corev1.PodPending
		}
		return p
	}
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: karpv1.NodePoolSpec{Limits: karpv1.Limits(res("100", "1Ti"))},
		Status: karpv1.NodePoolStatus{Resources: res("2", "8Gi")}}
	SetClusterSource(ClusterSource{
		Nodes: func() []*corev1.Node { return []*corev1.Node{node, other} },
		Pods: func() []*corev1.Pod {
			return []*corev1.Pod{pod("app", "n1", "500m", false), pod("ds", "n1", "100m", true), pod("wait", "", "1", false)}
		},
		NodePools: func() []*karpv1.NodePool { return []*karpv1.NodePool{pool} },
		Now:       func() time.Time { return now },
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(clusterCollector{})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	find := func(name string, want map[string]string) (float64, bool) {
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
		next:
			for _, m := range f.GetMetric() {
				got := labelMap(m)
				for k, v := range want {
					if got[k] != v {
						continue next
					}
				}
				return m.GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"karpenter_nodes_allocatable", map[string]string{"node_name": "n1", "resource_type": "cpu", "nodepool": "default", "zone": "zone-a", "arch": "amd64", "capacity_type": "spot", "instance_type": "m5.large", "managed": "true"}, 1.9},
		{"karpenter_nodes_allocatable", map[string]string{"node_name": "n0", "resource_type": "cpu", "nodepool": "", "managed": "false"}, 4},
		{"karpenter_nodes_total_pod_requests", map[string]string{"node_name": "n1", "resource_type": "cpu"}, 0.6},
		{"karpenter_nodes_total_daemon_requests", map[string]string{"node_name": "n1", "resource_type": "cpu"}, 0.1},
		{"karpenter_nodes_total_pod_requests", map[string]string{"node_name": "n1", "resource_type": "memory"}, 2 << 30},
		{"karpenter_nodes_system_overhead", map[string]string{"node_name": "n1", "resource_type": "memory"}, 1 << 30},
		{"karpenter_nodes_current_lifetime_seconds", map[string]string{"node_name": "n1"}, 60},
		{"karpenter_cluster_utilization_percent", map[string]string{"resource_type": "cpu"}, 100 * 0.6 / 5.9},
		{"karpenter_nodepools_usage", map[string]string{"nodepool": "default", "resource_type": "cpu"}, 2},
		{"karpenter_nodepools_limit", map[string]string{"nodepool": "default", "resource_type": "cpu"}, 100},
		{"karpenter_pods_state", map[string]string{"name": "app", "node": "n1", "nodepool": "default", "phase": "Running", "scheduled": "true", "instance_type": "m5.large"}, 1},
		{"karpenter_pods_unbound_time_seconds", map[string]string{"name": "wait", "namespace": "ns"}, 30},
		{"karpenter_pods_state", map[string]string{"name": "wait", "node": "", "phase": "Pending", "scheduled": "false", "managed": "false"}, 1},
	} {
		got, ok := find(tc.name, tc.labels)
		if !ok || got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestReconciledByControllerRuntimeNames(t *testing.T) {
	Reconciled("unit-test", time.Millisecond, time.Second, nil)
	want := `
# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="unit-test",result="requeue_after"} 1
`
	if err := testutil.CollectAndCompare(reconcileTotal, strings.NewReader(want), "controller_runtime_reconcile_total"); err != nil {
		t.Fatal(err)
	}
}

func TestNodeClaimTransitionsAsOperatorpkgCounts(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	claim := func(status metav1.ConditionStatus, reason string, when metav1.Time) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{karpv1.NodePoolLabelKey: "unit"}},
			Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{{Type: "Launched", Status: status, Reason: reason, LastTransitionTime: when}}}}
	}
	old := claim(metav1.ConditionUnknown, "AwaitingLaunch", at)
	NodeClaimConditionsChanged(nil, old)
	NodeClaimConditionsChanged(old, old) // no change: not counted
	NodeClaimConditionsChanged(old, claim(metav1.ConditionTrue, "Launched", metav1.NewTime(at.Add(3*time.Second))))
	want := `
# HELP operator_nodeclaim_status_condition_transitions_total The count of transitions of a given object, type and status.
# TYPE operator_nodeclaim_status_condition_transitions_total counter
operator_nodeclaim_status_condition_transitions_total{karpenter_k8s_aws_ec2nodeclass="",karpenter_sh_nodepool="unit",reason="AwaitingLaunch",status="Unknown",type="Launched"} 1
operator_nodeclaim_status_condition_transitions_total{karpenter_k8s_aws_ec2nodeclass="",karpenter_sh_nodepool="unit",reason="Launched",status="True",type="Launched"} 1
`
	if err := testutil.CollectAndCompare(kConditionTransitions, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(kConditionTransitionSeconds); got != 1 {
		t.Errorf("%d transition_seconds series, want 1 (Launched, Unknown)", got)
	}
}

// TestKarpenterLabelValues checks the label values Karpenter's alerts match: lower-cased
// reasons, its consolidation types, snake-cased policies and the termination mode.
func TestKarpenterLabelValues(t *testing.T) {
	VoluntaryDecision("delete", "single-node consolidation", "Underutilized", "labels")
	if got := testutil.ToFloat64(kDecisions.WithLabelValues("delete", "underutilized", "single")); got != 1 {
		t.Errorf("decisions_total{delete,underutilized,single} = %v, want 1", got)
	}
	zero := metav1.Duration{}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{karpv1.NodePoolLabelKey: "labels", karpv1.CapacityTypeLabelKey: "spot"}}}
	NodeClaimDisrupted(claim, "Underutilized", "WhenEmptyOrUnderutilized")
	claim.Spec.TerminationGracePeriod = &zero
	NodeClaimDisrupted(claim, "Expired", "")
	for _, labels := range [][]string{
		{"underutilized", "labels", "spot", "when_empty_or_underutilized", "graceful"},
		{"expired", "labels", "spot", "", "forceful"},
	} {
		if got := testutil.ToFloat64(kNodeClaimsDisrupted.WithLabelValues(labels...)); got != 1 {
			t.Errorf("nodeclaims_disrupted_total%v = %v, want 1", labels, got)
		}
	}
	InterruptionReceived("SpotInterruption", time.Time{}, time.Time{})
	if got := testutil.ToFloat64(kInterruptionReceived.WithLabelValues("spot_interrupted")); got != 1 {
		t.Errorf("interruption_received_messages_total{spot_interrupted} = %v, want 1", got)
	}
}

func TestEvictionRequestsByCode(t *testing.T) {
	EvictionRequested(nil)
	EvictionRequested(apierrors.NewTooManyRequests("budget", 1))
	for code, want := range map[string]float64{"200": 1, "429": 1} {
		if got := testutil.ToFloat64(kEvictionRequests.WithLabelValues(code)); got != want {
			t.Errorf("eviction_requests_total{code=%s} = %v, want %v", code, got, want)
		}
	}
}
