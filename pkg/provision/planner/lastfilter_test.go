package planner

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// filterLastOn runs PreFilter and Filter for p on simulator s against the cluster without it, on
// the node it was planned for, and returns why it fails, or "".
func filterLastOn(t *testing.T, s *simulation.Simulator, nodes []*corev1.Node, pods []*corev1.Pod, p *corev1.Pod) string {
	t.Helper()
	var others []*corev1.Pod
	for _, q := range pods {
		if q.UID != p.UID {
			others = append(others, q)
		}
	}
	return runFilterLast(t, s, schedcache.NewSnapshot(others, nodes), p, nodeOf(pods, p))
}

// lastOn asks filterLastOn's question of many pods of one cluster. It builds the cluster's
// snapshot once and takes each pod off its node for that pod's own check, then puts it back: a
// snapshot per pod made verifying a plan quadratic in its pods (most of the planner package's
// test time). The snapshot also keeps sets built from every pod at its creation (the claims'
// volumes a pod uses, the pod groups), and a node's host ports are a set without counts. A pod
// with a volume, a ResourceClaim, a pod group or a host port is checked on a snapshot of its own,
// as before, so that none of those counts it against itself or loses a neighbour's.
type lastOn struct {
	nodes    []*corev1.Node
	pods     []*corev1.Pod
	snapshot *schedcache.Snapshot
}

func newLastOn(nodes []*corev1.Node, pods []*corev1.Pod) *lastOn {
	return &lastOn{nodes: nodes, pods: pods, snapshot: schedcache.NewSnapshot(pods, nodes)}
}

func (l *lastOn) why(t *testing.T, s *simulation.Simulator, p *corev1.Pod) string {
	t.Helper()
	if len(p.Spec.Volumes) > 0 || len(p.Spec.ResourceClaims) > 0 || p.Spec.SchedulingGroup != nil || usesHostPorts(p) {
		return filterLastOn(t, s, l.nodes, l.pods, p)
	}
	node := nodeOf(l.pods, p)
	got, err := l.snapshot.NodeInfos().Get(node)
	if err != nil {
		t.Fatalf("pod %s is on node %q, which is not in the cluster: %v", p.Name, node, err)
	}
	ni := got.(*framework.NodeInfo)
	var placed fwk.PodInfo
	for _, pi := range ni.Pods {
		if pi.GetPod().UID == p.UID {
			placed = pi
		}
	}
	if placed == nil {
		t.Fatalf("pod %s is not among node %s's pods", p.Name, node)
	}
	if err := ni.RemovePod(klog.Background(), placed.GetPod()); err != nil {
		t.Fatalf("taking pod %s off node %s: %v", p.Name, node, err)
	}
	defer ni.AddPodInfo(placed)
	return runFilterLast(t, s, l.snapshot, p, node)
}

// usesHostPorts: a node's ports are a set without counts, so taking off one of two pods that ask
// the same port would free it for the other too, and hide the very conflict a check looks for.
func usesHostPorts(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				return true
			}
		}
	}
	return false
}

// nodeOf is the node p is on among pods ("" if it is not among them).
func nodeOf(pods []*corev1.Pod, p *corev1.Pod) string {
	for _, q := range pods {
		if q.UID == p.UID {
			return q.Spec.NodeName
		}
	}
	return ""
}

func runFilterLast(t *testing.T, s *simulation.Simulator, snapshot *schedcache.Snapshot, p *corev1.Pod, node string) string {
	t.Helper()
	s.Use(snapshot)
	state, _, status := s.PreFilter(context.Background(), p)
	if status != nil {
		return "PreFilter: " + status.Message()
	}
	ni, err := snapshot.NodeInfos().Get(node)
	if err != nil {
		t.Fatalf("pod %s is on node %q, which is not in the cluster: %v", p.Name, node, err)
	}
	if st := s.Filter(context.Background(), state, p, ni.(*framework.NodeInfo)); !st.IsSuccess() {
		return st.Message()
	}
	return ""
}

// TestLastOnAnswersAsASnapshotPerPod: the shared snapshot gives each pod the answer a snapshot
// without it gives, on a cluster where some pods fit as the last one placed and some do not (too
// little CPU left, a repelling neighbour, a spread that one more pod would skew, a host port
// another pod there takes).
func TestLastOnAnswersAsASnapshotPerPod(t *testing.T) {
	nodes := []*corev1.Node{zonedNode("a1", fake.ZoneA, "2", "8Gi"), zonedNode("a2", fake.ZoneA, "4", "8Gi"), zonedNode("b1", fake.ZoneB, "4", "8Gi")}
	spread := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selecting("s")}}
	}
	place := map[string]*corev1.Pod{
		// a1 is over-full: each of its pods fails as the last one.
		"a1": newPod("big0", "900m", "1Gi"), "a1 ": newPod("big1", "900m", "1Gi"), "a1  ": newPod("big2", "900m", "1Gi"),
		// a2 holds two pods that repel each other, and three spread pods; b1 one spread pod and a
		// pod that fits anywhere.
		"a2": newPod("loner0", "100m", "1Gi", labelled("loner"), awayFrom("loner")), "a2 ": newPod("loner1", "100m", "1Gi", labelled("loner"), awayFrom("loner")),
		"a2  ": newPod("s0", "100m", "1Gi", labelled("s"), spread), "a2   ": newPod("s1", "100m", "1Gi", labelled("s"), spread),
		"a2    ": newPod("s2", "100m", "1Gi", labelled("s"), spread), "b1": newPod("s3", "100m", "1Gi", labelled("s"), spread),
		"b1 ": newPod("small", "100m", "1Gi"),
		// Two pods on b1 ask the same host port: each fails beside the other.
		"b1  ": newPod("port0", "100m", "1Gi", hostPort(8080, corev1.ProtocolTCP, "")), "b1   ": newPod("port1", "100m", "1Gi", hostPort(8080, corev1.ProtocolTCP, "")),
	}
	var pods []*corev1.Pod
	for at, p := range place {
		pods = append(pods, clusterview.OnNode(p, strings.TrimSpace(at)))
	}
	s := testPlanner(t).sim
	last := newLastOn(nodes, pods)
	fits, fails := 0, 0
	for _, p := range place {
		want := filterLastOn(t, s, nodes, pods, p)
		if got := last.why(t, s, p); got != want {
			t.Errorf("pod %s: the shared snapshot says %q, a snapshot of its own %q", p.Name, got, want)
		}
		if want == "" {
			fits++
		} else {
			fails++
		}
	}
	t.Logf("%d pods fit as the last one placed, %d do not", fits, fails)
	// The cluster must hold both answers, or the comparison shows nothing.
	if fits == 0 || fails < 7 {
		t.Errorf("%d pods fit and %d fail as the last one placed; want some that fit and at least 7 that fail", fits, fails)
	}
}
