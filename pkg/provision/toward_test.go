package provision

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// A pending pod a plan left to a node counts there in the next plans, as the scheduler will
// place it, until a scheduling cycle for it fails: then it is planned again. A cycle that failed
// while its NodeClaim's node was still starting is no refusal of the node once it initialized.
func TestAPodLeftToANodeCountsThereUntilTheSchedulerRefusesIt(t *testing.T) {
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	nodes := zoneNodes()[:2]
	left, launched := newPod("left", "500m", "512Mi"), newPod("launched", "500m", "512Mi")
	pods := []*corev1.Pod{left, launched}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-1"}}
	claim.Status.NodeName = nodes[1].Name
	claims := []*karpv1.NodeClaim{claim}
	p := New(Options{SchedulerName: "tailor", Clock: clk})
	counted := func() map[string]string {
		t.Helper()
		cluster, _ := p.forgetStale(nodes, pods, claims, p.listed())
		view := cluster.View(nil)
		out := map[string]string{}
		for _, pod := range pods {
			if view.Counted[pod.UID] {
				out[pod.Name] = view.Headed[pod.UID]
			}
		}
		return out
	}

	p.mu.Lock()
	p.headFor(left, nodes[0].Name) // a plan found it room on node-0
	p.planned[launched.UID] = claim.Name
	p.wrote(launched.UID)
	p.headFor(launched, nodes[1].Name) // its claim's node is named, and registered
	p.mu.Unlock()
	if got := counted(); got["left"] != nodes[0].Name || got["launched"] != nodes[1].Name {
		t.Fatalf("counted %v, want left on %s and launched on %s", got, nodes[0].Name, nodes[1].Name)
	}

	clk.Step(time.Second)
	refusedOn := func(string) *corev1.Node { return nil }
	p.Rejected(left, refusedOn)
	p.Rejected(launched, refusedOn) // its node is up but still starting
	if got := counted(); got["left"] != "" {
		t.Errorf("a pod the scheduler refused since its plan is still counted on %s: it would never be planned again", got["left"])
	}

	clk.Step(time.Second)
	claim.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", clk.Now())
	if got := counted(); got["launched"] != nodes[1].Name {
		t.Errorf("once its claim initialized, the launched-for pod is counted %v, want on %s", got, nodes[1].Name)
	}
	clk.Step(time.Second)
	p.Rejected(launched, refusedOn)
	if got := counted(); got["launched"] != "" {
		t.Errorf("refused on its initialized node, the pod is still counted on %s", got["launched"])
	}
	p.mu.Lock()
	p.headFor(left, nodes[1].Name) // a later plan sent it elsewhere
	p.mu.Unlock()
	if got := counted(); got["left"] != nodes[1].Name {
		t.Errorf("headed for a new node, the refused pod is counted %v, want on %s", got, nodes[1].Name)
	}
	clk.Step(time.Second)
	p.mu.Lock()
	p.headFor(launched, nodes[1].Name) // a later plan put it back where it was refused
	since := p.headed[launched.UID].since
	p.mu.Unlock()
	if got := counted(); got["launched"] != nodes[1].Name {
		t.Errorf("placed again on the node that refused it, the pod is counted %v, want on %s until it is refused again", got, nodes[1].Name)
	}
	if !since.Before(clk.Now()) {
		t.Errorf("placed again on the same node, its heading restarted at %v: the stranded watch would never find it", since)
	}
}
