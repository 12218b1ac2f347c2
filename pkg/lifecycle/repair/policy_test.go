package repair

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func node(name, pool string, conds ...corev1.NodeCondition) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if pool != "" {
		n.Labels[karpv1.NodePoolLabelKey] = pool
	}
	n.Status.Conditions = conds
	return n
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, since time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(since)}
}

var (
	ready    = cond(corev1.NodeReady, corev1.ConditionTrue, t0)
	notReady = cond(corev1.NodeReady, corev1.ConditionFalse, t0)
)

// awsLike has a condition with a shorter toleration than Ready's, as the AWS provider's
// AcceleratedHardwareReady.
var awsLike = append(cloud.DefaultRepairPolicies(),
	cloud.RepairPolicy{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, Toleration: 10 * time.Minute})

func TestUnhealthy(t *testing.T) {
	cases := []struct {
		name     string
		node     *corev1.Node
		wantType corev1.NodeConditionType
		wantDue  time.Time
	}{
		{name: "ready", node: node("n", "p", ready)},
		{name: "not ready", node: node("n", "p", notReady), wantType: corev1.NodeReady, wantDue: t0.Add(30 * time.Minute)},
		{name: "unknown: the kubelet stopped posting", node: node("n", "p", cond(corev1.NodeReady, corev1.ConditionUnknown, t0)),
			wantType: corev1.NodeReady, wantDue: t0.Add(30 * time.Minute)},
		{name: "a condition no policy names", node: node("n", "p", ready, cond(corev1.NodeMemoryPressure, corev1.ConditionTrue, t0))},
		{name: "a named condition in its healthy status", node: node("n", "p", ready, cond("AcceleratedHardwareReady", corev1.ConditionTrue, t0))},
		{name: "the condition due first wins", node: node("n", "p", cond(corev1.NodeReady, corev1.ConditionFalse, t0),
			cond("AcceleratedHardwareReady", corev1.ConditionFalse, t0.Add(5*time.Minute))),
			wantType: "AcceleratedHardwareReady", wantDue: t0.Add(15 * time.Minute)},
		{name: "an older Ready outlasts a newer short one", node: node("n", "p", cond(corev1.NodeReady, corev1.ConditionFalse, t0.Add(-time.Hour)),
			cond("AcceleratedHardwareReady", corev1.ConditionFalse, t0)),
			wantType: corev1.NodeReady, wantDue: t0.Add(-30 * time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := Unhealthy(tc.node, awsLike)
			if ok != (tc.wantType != "") {
				t.Fatalf("unhealthy = %v, want %v", ok, tc.wantType != "")
			}
			if ok && (f.Condition.Type != tc.wantType || !f.Due.Equal(tc.wantDue)) {
				t.Fatalf("finding %s due %s, want %s due %s", f.Condition.Type, f.Due, tc.wantType, tc.wantDue)
			}
		})
	}
}

// nodes is healthy and broken nodes of a pool.
func nodes(pool string, healthy, broken int) []*corev1.Node {
	var out []*corev1.Node
	for i := range healthy {
		out = append(out, node(fmt.Sprintf("%s-ok-%d", pool, i), pool, ready))
	}
	for i := range broken {
		out = append(out, node(fmt.Sprintf("%s-bad-%d", pool, i), pool, notReady))
	}
	return out
}

func TestBlocked(t *testing.T) {
	cases := []struct {
		name  string
		nodes []*corev1.Node
		pool  string
		want  string // a part of the reason, or "" for not blocked
	}{
		{name: "one of one: 20% rounds up to a node", nodes: nodes("a", 0, 1), pool: "a"},
		{name: "one of five", nodes: nodes("a", 4, 1), pool: "a"},
		{name: "two of five: more than 20% of the pool", nodes: nodes("a", 3, 2), pool: "a", want: "2 of NodePool a's 5 nodes are unhealthy, more than 20%"},
		{name: "two of ten", nodes: nodes("a", 8, 2), pool: "a"},
		{name: "three of ten", nodes: nodes("a", 7, 3), pool: "a", want: "3 of NodePool a's 10 nodes"},
		{name: "two of three", nodes: nodes("a", 1, 2), pool: "a", want: "NodePool a's 3 nodes"},
		{name: "another pool's failures do not count against this pool",
			nodes: append(nodes("a", 9, 1), nodes("b", 8, 2)...), pool: "a"},
		{name: "but the whole cluster's do", nodes: append(append(nodes("a", 2, 1), nodes("b", 0, 3)...), nodes("c", 4, 0)...), pool: "a",
			want: "4 of the cluster's 10 nodes are unhealthy, more than 20%"},
		{name: "a node not Tailor's counts for the cluster", nodes: append(nodes("a", 4, 1), nodes("", 0, 2)...), pool: "a",
			want: "3 of the cluster's 7 nodes"},
		{name: "a NodeClaim without a NodePool: the cluster only", nodes: append(nodes("a", 0, 1), nodes("", 4, 0)...), pool: ""},
		{name: "a NodeClaim without a NodePool in a failing cluster", nodes: append(nodes("a", 0, 2), nodes("", 3, 0)...), pool: "",
			want: "2 of the cluster's 5 nodes"},
		{name: "a short-tolerance condition counts before it is due", pool: "a", nodes: append(nodes("a", 3, 1),
			node("gpu", "a", ready, cond("AcceleratedHardwareReady", corev1.ConditionFalse, t0))), want: "2 of NodePool a's 5 nodes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Blocked(tc.nodes, tc.pool, awsLike)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("Blocked = %q, want %q", got, tc.want)
			}
		})
	}
}
