package provision

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

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
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// The nodes launched for a gang that timed out short go together, at the next pass after the
// give-back: one held by its pod's destination, one by a pod the scheduler reserved there and
// keeps at Permit, and one whose instance never launched. Left to their own idle times, the first
// to go let the gang back into the queue, which reserved a pod on a node still up, and that node
// stayed until it was reported Unused (TestGangGivenBackWhenItCannotComplete, an "ai" suite run).
// A node a pod bound to since is kept, and so is one another pod is on its way to.
func TestGangGivenBackTakesItsNodesTogether(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	claimStore, podStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil), cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	nodeStore := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	for _, name := range []string{"destined", "reserved", "unlaunched", "taken", "shared"} {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
		if name != "unlaunched" {
			c.Status.ProviderID, c.Status.NodeName = "aws:///i-"+name, "n-"+name
			c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", start)
			_ = nodeStore.Add(readyNode("n-"+name, "2", "4Gi"))
		}
		_ = claimStore.Add(c)
	}
	pods := gangPods("ring", 6)
	// A pod of no gang, pending, planned onto the room left on one of the gang's nodes.
	sharing := newPod("sharing", "500m", "512Mi")
	for _, pod := range append(pods, sharing) {
		_ = podStore.Add(pod)
	}
	client := &deletions{}
	recorder := events.NewFakeRecorder(20)
	p := New(Options{SchedulerName: "tailor", Kube: kubefake.NewClientset(), NodeClaims: client, Clock: clk, Recorder: recorder,
		Pods: corelisters.NewPodLister(podStore), Nodes: corelisters.NewNodeLister(nodeStore), ClaimLister: karplisters.NewNodeClaimLister(claimStore),
		PodGroups: podGroupLister(t, gang("ring", 6)), GangCompletionTimeout: 10 * time.Second})
	p.mu.Lock()
	for _, name := range []string{"destined", "reserved", "unlaunched", "taken", "shared"} {
		p.launchedHere[name] = start
	}
	p.destined[pods[4].UID] = destination{node: "n-shared", until: start.Add(time.Hour)}
	p.planned[sharing.UID] = "shared"
	p.destined[pods[0].UID] = destination{node: "n-destined", until: start.Add(time.Hour)}
	p.planned[pods[2].UID] = "unlaunched"
	p.destined[pods[3].UID] = destination{node: "n-taken", until: start.Add(time.Hour)}
	p.mu.Unlock()
	p.Reserve(pods[1], "n-reserved")

	// The round's view shows the reserved pod on its node, as it counts pods the scheduler assumed.
	assumed := pods[1].DeepCopy()
	assumed.Spec.NodeName = "n-reserved"
	placed := []*corev1.Pod{assumed}
	short := []planner.ShortGang{{Gang: planner.Gang{Namespace: "default", Name: "ring", MinCount: 6}, Placed: 5, Pods: pods}}
	p.giveBackShortGangs(ctx, placed, short)
	clk.Step(11 * time.Second)
	// A pod of another owner bound to one of the nodes since.
	other := newPod("other", "500m", "512Mi")
	other.Spec.NodeName = "n-taken"
	_ = podStore.Add(other)
	p.giveBackShortGangs(ctx, placed, short)
	p.checkStranded(ctx)
	slices.Sort(client.names)
	if want := []string{"destined", "reserved", "unlaunched"}; !slices.Equal(client.names, want) {
		t.Fatalf("the first pass after the give-back deleted %v, want %v", client.names, want)
	}
	var said []string
	for len(recorder.Events) > 0 {
		said = append(said, <-recorder.Events)
	}
	joined := strings.Join(said, "\n")
	for _, want := range []string{"GangGivenBack", "launched for PodGroup default/ring, which did not complete"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events %q do not say %q", joined, want)
		}
	}
	clk.Step(time.Minute)
	p.checkStranded(ctx)
	if len(client.names) != 3 {
		t.Errorf("later passes gave back %v; the node a pod bound to stays, and so does the one another pod is planned onto", client.names[3:])
	}
}
