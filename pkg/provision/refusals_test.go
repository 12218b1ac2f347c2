package provision

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// A pod the scheduler does not place on the nodes launched for it stops getting new ones after
// refusalLimit of them, for a backoff that doubles, and is told why once per backoff; it is
// forgotten once it binds.
func TestAPodRefusedOnItsNodesStopsGettingNew(t *testing.T) {
	testPlanner(t)
	ctx := context.Background()
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	nodes := zoneNodes()[:3]
	pod := newPod("refused", "500m", "512Mi", nodeSelector("example.com/team", "payments"))
	recorder := events.NewFakeRecorder(10)
	p := New(Options{SchedulerName: "tailor", Kube: kubefake.NewClientset(pod), Clock: clk, Recorder: recorder})
	p.checker = sim
	claims := map[string]*karpv1.NodeClaim{}
	var list []*karpv1.NodeClaim
	launch := func(i int) []*corev1.Pod {
		name := "claim-" + nodes[i].Name
		p.mu.Lock()
		tripped := p.noteLaunched(name, []*corev1.Pod{pod}, claims)
		p.mu.Unlock()
		// The claim launches and initializes; the scheduler does not place the pod there.
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Status.NodeName = nodes[i].Name
		c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", clk.Now())
		claims[name] = c
		list = append(list, c)
		return tripped
	}
	backoffs := testutil.ToFloat64(metrics.PodsRefusedBackoff)
	for i := range refusalLimit {
		if tripped := launch(i); len(tripped) != 0 || p.backedOff(pod) {
			t.Fatalf("backed off after %d refused nodes; the limit is %d", i, refusalLimit)
		}
	}
	tripped := launch(refusalLimit)
	if len(tripped) != 1 || !p.backedOff(pod) {
		t.Fatalf("not backed off after %d refused nodes", refusalLimit)
	}
	p.tellRefused(ctx, tripped, nodes, []*corev1.Pod{pod}, list)
	if len(recorder.Events) != 1 {
		t.Fatalf("%d Events, want 1", len(recorder.Events))
	}
	event := <-recorder.Events
	for _, want := range []string{"FailedProvisioning", nodes[0].Name, nodes[1].Name, "NodeAffinity", "1m0s"} {
		if !strings.Contains(event, want) {
			t.Errorf("Event %q does not mention %q", event, want)
		}
	}
	if d := testutil.ToFloat64(metrics.PodsRefusedBackoff) - backoffs; d != 1 {
		t.Errorf("%s rose by %v, want 1", "tailor_provisioner_pods_refused_backoff_total", d)
	}
	clk.Step(refusalBackoff + time.Second)
	if p.backedOff(pod) {
		t.Fatal("still backed off after the backoff")
	}
	// Two more refusals: the next backoff is twice as long.
	claims = map[string]*karpv1.NodeClaim{}
	launch(0)
	launch(1)
	if tripped := launch(2); len(tripped) != 1 {
		t.Fatal("not backed off again")
	}
	clk.Step(refusalBackoff + time.Second)
	if !p.backedOff(pod) {
		t.Error("the second backoff is no longer than the first")
	}
	p.forgetRefusals(map[types.UID]bool{})
	if p.backedOff(pod) {
		t.Error("a pod that bound is still backed off")
	}
}
