package provision

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// A pod the scheduler does not place on the nodes launched for it is left out of plans once
// refusalLimit of them have refused it, before a plan launches another, for a backoff that
// doubles, and is told why once per backoff. A node refuses a pod when a scheduling cycle that had
// the node up finds no place for the pod; a pod merely still pending beside its node, which the
// scheduler has not come back to, is not refused. A node that is leaving is no refusal; a pod that
// binds is forgotten.
func TestAPodRefusedOnItsNodesStopsGettingNew(t *testing.T) {
	testPlanner(t)
	ctx := context.Background()
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	nodes := zoneNodes()[:3]
	nodeIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	for _, n := range nodes {
		if err := nodeIndex.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	claimIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	pod := newPod("refused", "500m", "512Mi", nodeSelector("example.com/team", "payments"))
	recorder := events.NewFakeRecorder(10)
	p := New(Options{SchedulerName: "tailor", Kube: kubefake.NewClientset(pod), Clock: clk, Recorder: recorder,
		ClaimLister: karplisters.NewNodeClaimLister(claimIndex), Nodes: corelisters.NewNodeLister(nodeIndex)})
	p.checker = sim
	claims := map[string]*karpv1.NodeClaim{}
	// launch creates a claim for the pod on node i, which then initializes.
	launch := func(i int) *karpv1.NodeClaim {
		name := "claim-" + nodes[i].Name
		p.mu.Lock()
		p.noteLaunched(name, []*corev1.Pod{pod})
		p.mu.Unlock()
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Status.NodeName = nodes[i].Name
		c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", clk.Now())
		claims[name] = c
		if err := claimIndex.Add(c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// snapshot is the nodes as the next cycle sees them: up (labelled initialized) unless noted.
	snapshot := map[string]*corev1.Node{}
	for _, n := range nodes {
		up := n.DeepCopy()
		up.Labels[karpv1.NodeInitializedLabelKey] = "true"
		snapshot[n.Name] = up
	}
	// rejected is a scheduling cycle that finds no place for the pod, and is refused it on the
	// named nodes of the snapshot.
	rejected := func(refused ...string) {
		p.Rejected(pod, func(name string) *corev1.Node {
			if slices.Contains(refused, name) {
				return snapshot[name]
			}
			return nil
		})
	}
	all := []string{nodes[0].Name, nodes[1].Name, nodes[2].Name}
	// planned reports whether the next plan takes the pod, and which pods it must tell.
	planned := func() (bool, []*corev1.Pod) {
		var tripped []*corev1.Pod
		return !p.backedOff(pod, claims, &tripped), tripped
	}
	backoffs := testutil.ToFloat64(metrics.PodsRefusedBackoff)
	// A node whose claim is being deleted says nothing of the scheduler.
	now := metav1.NewTime(start)
	launch(0).DeletionTimestamp = &now
	rejected(all...)
	if ok, _ := planned(); !ok {
		t.Fatal("backed off for a node that was leaving")
	}
	// Up, with the pod still pending beside them: refusals only once a cycle has had them.
	launch(1)
	launch(2)
	for range 3 {
		if ok, _ := planned(); !ok {
			t.Fatal("backed off for nodes the scheduler has not tried the pod on")
		}
	}
	rejected()
	if ok, _ := planned(); !ok {
		t.Fatal("backed off for nodes that did not refuse the pod in the cycle")
	}
	// Node 1 not up yet as the cycle saw it, node 2 cordoned: neither refused the pod.
	delete(snapshot[nodes[1].Name].Labels, karpv1.NodeInitializedLabelKey)
	snapshot[nodes[2].Name].Spec.Unschedulable = true
	rejected(all...)
	p.mu.Lock()
	counted := slices.Clone(p.refusals[pod.UID].refusedOn)
	p.mu.Unlock()
	if len(counted) != 0 {
		t.Fatalf("refusals %v counted on a node not up and a node leaving", counted)
	}
	// A claim created a moment ago, not in the informer's cache yet, stays the pod's.
	p.mu.Lock()
	p.created["claim-just-created"] = createdClaim{claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-just-created"}}, at: clk.Now()}
	p.noteLaunched("claim-just-created", []*corev1.Pod{pod})
	p.mu.Unlock()
	snapshot[nodes[1].Name].Labels[karpv1.NodeInitializedLabelKey] = "true"
	rejected(all...)
	p.mu.Lock()
	launched := slices.Clone(p.refusals[pod.UID].launched)
	p.mu.Unlock()
	if !slices.Contains(launched, "claim-just-created") || slices.Contains(launched, "claim-"+nodes[2].Name) {
		t.Fatalf("launched claims kept %v, want the one just created and not the cordoned node's", launched)
	}
	if ok, _ := planned(); !ok {
		t.Fatalf("backed off after one refused node; the limit is %d", refusalLimit)
	}
	// Node 2 back, and a claim launched on it again: the second refusal.
	snapshot[nodes[2].Name].Spec.Unschedulable = false
	launch(2)
	rejected(all...)
	ok, tripped := planned()
	if ok || len(tripped) != 1 {
		t.Fatalf("planned again after %d refused nodes", refusalLimit)
	}
	var list []*karpv1.NodeClaim
	for _, c := range claims {
		list = append(list, c)
	}
	p.tellRefused(ctx, tripped, nodes, []*corev1.Pod{pod}, list)
	if len(recorder.Events) != 1 {
		t.Fatalf("%d Events, want 1", len(recorder.Events))
	}
	event := <-recorder.Events
	for _, want := range []string{"FailedProvisioning", nodes[1].Name, nodes[2].Name, "NodeAffinity", "1m0s"} {
		if !strings.Contains(event, want) {
			t.Errorf("Event %q does not mention %q", event, want)
		}
	}
	if strings.Contains(event, nodes[0].Name) {
		t.Errorf("Event %q counts the node that was leaving", event)
	}
	if d := testutil.ToFloat64(metrics.PodsRefusedBackoff) - backoffs; d != 1 {
		t.Errorf("tailor_provisioner_pods_refused_backoff_total rose by %v, want 1", d)
	}
	if ok, tripped := planned(); ok || len(tripped) != 0 {
		t.Error("a pod backed off is planned, or told again")
	}
	clk.Step(refusalBackoff + time.Second)
	if ok, _ := planned(); !ok {
		t.Fatal("still backed off after the backoff")
	}
	// Two more refusals: the next backoff is twice as long.
	claims = map[string]*karpv1.NodeClaim{}
	launch(1)
	rejected(all...)
	if ok, _ := planned(); !ok {
		t.Fatalf("backed off after one refused node; the limit is %d", refusalLimit)
	}
	launch(2)
	rejected(all...)
	if ok, _ := planned(); ok {
		t.Fatal("not backed off again")
	}
	clk.Step(refusalBackoff + time.Second)
	if ok, _ := planned(); ok {
		t.Error("the second backoff is no longer than the first")
	}
	p.forgetRefusals(map[types.UID]bool{})
	if ok, _ := planned(); !ok {
		t.Error("a pod that bound is still backed off")
	}
}

// The backoff doubles up to its cap and stays there, however many trips.
func TestRefusalBackoffIsCapped(t *testing.T) {
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	for trips, w := range want {
		if got := backoff(trips); got != w {
			t.Errorf("backoff(%d) = %v, want %v", trips, got, w)
		}
	}
	for _, trips := range []int{28, 53, 1 << 20} {
		if got := backoff(trips); got != maxRefusalBackoff {
			t.Errorf("backoff(%d) = %v, want %v", trips, got, maxRefusalBackoff)
		}
	}
}
