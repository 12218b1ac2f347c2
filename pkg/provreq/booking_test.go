package provreq

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8stypes "k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func pod(name, node string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", UID: k8stypes.UID("uid-" + name), Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node}}
}

// TestBookedPodsStandWhereTheRoomIs: a booked pod is bound to its node, or nominated to its claim's
// stand-in (named after the claim's node once known, after the claim before); it blocks
// disruption, belongs to no scheduler, and a claim gone takes its pods with it.
func TestBookedPodsStandWhereTheRoomIs(t *testing.T) {
	w := newWorld(t)
	_ = w.nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})
	_ = w.claims.Add(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "launching"}})
	_ = w.claims.Add(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "named"}, Status: karpv1.NodeClaimStatus{NodeName: "node-c"}})
	_ = w.claims.Add(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "registered"}, Status: karpv1.NodeClaimStatus{NodeName: "node-b"}})
	ann := map[string]string{}
	w.c.opts.Bookings.book("team/r", &booking{slots: []slot{
		{pod: pod("r-0", "", ann), node: "node-a"},
		{pod: pod("r-1", "", ann), claim: "launching"},
		{pod: pod("r-2", "", ann), claim: "named"},
		{pod: pod("r-3", "", ann), claim: "registered"},
		{pod: pod("r-4", "", ann), claim: "gone"},
	}})
	got := w.c.opts.Bookings.booked(nil)
	want := []struct{ node, nominated string }{{"node-a", ""}, {"", "launching"}, {"", "node-c"}, {"node-b", ""}}
	if len(got) != len(want) {
		t.Fatalf("got %d booked pods, want %d", len(got), len(want))
	}
	for i, p := range got {
		if p.Spec.NodeName != want[i].node || p.Status.NominatedNodeName != want[i].nominated {
			t.Errorf("%s on %q nominated %q, want %q and %q", p.Name, p.Spec.NodeName, p.Status.NominatedNodeName, want[i].node, want[i].nominated)
		}
		if p.Annotations[karpv1.DoNotDisruptAnnotationKey] != "true" || p.Spec.SchedulerName != BookedSchedulerName || p.Name != "booking-r-"+string(rune('0'+i)) {
			t.Errorf("%s: annotations %v, scheduler %q", p.Name, p.Annotations, p.Spec.SchedulerName)
		}
	}
	if len(ann) != 0 {
		t.Fatal("booking wrote into the request's pods")
	}
}

// TestConsumersTakeTheirRoom: each pod that consumes the request frees one booked pod, the one on
// its node when it is bound to a booked node; pods of another request or namespace free nothing.
func TestConsumersTakeTheirRoom(t *testing.T) {
	w := newWorld(t)
	w.c.opts.Bookings.book("team/r", &booking{slots: []slot{
		{pod: pod("r-0", "", map[string]string{}), node: "node-a"},
		{pod: pod("r-1", "", map[string]string{}), node: "node-b"},
		{pod: pod("r-2", "", map[string]string{}), node: "node-c"},
	}})
	consume := map[string]string{autoscalingv1.ConsumeAnnotationKey: "r"}
	old := map[string]string{autoscalingv1.DeprecatedConsumeAnnotationKey: "r"}
	other := pod("x", "node-a", map[string]string{autoscalingv1.ConsumeAnnotationKey: "other"})
	elsewhere := pod("y", "node-a", consume)
	elsewhere.Namespace = "elsewhere"
	for _, tc := range []struct {
		name  string
		real  []*corev1.Pod
		nodes []string
	}{
		{"none", []*corev1.Pod{other, elsewhere}, []string{"node-a", "node-b", "node-c"}},
		{"bound", []*corev1.Pod{pod("j-0", "node-b", consume)}, []string{"node-a", "node-c"}},
		{"pending", []*corev1.Pod{pod("j-0", "", old)}, []string{"node-a", "node-b"}},
		{"both", []*corev1.Pod{pod("j-0", "", consume), pod("j-1", "node-a", consume)}, []string{"node-b"}},
		{"more than booked", []*corev1.Pod{pod("j-0", "", consume), pod("j-1", "", consume), pod("j-2", "", consume), pod("j-3", "", consume)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []string
			for _, p := range w.c.opts.Bookings.booked(tc.real) {
				nodes = append(nodes, p.Spec.NodeName)
			}
			if len(nodes) != len(tc.nodes) {
				t.Fatalf("booked on %v, want %v", nodes, tc.nodes)
			}
			for i := range nodes {
				if nodes[i] != tc.nodes[i] {
					t.Fatalf("booked on %v, want %v", nodes, tc.nodes)
				}
			}
		})
	}
}

// TestBookedListerAddsBookingsToPods: the lister the provisioner and disruption read lists real
// and booked pods, by selector and namespace; Get reads real pods.
func TestBookedListerAddsBookingsToPods(t *testing.T) {
	w := newWorld(t)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = indexer.Add(pod("web", "node-a", nil))
	booked := pod("r-0", "", map[string]string{})
	booked.Labels = map[string]string{"job": "train"}
	w.c.opts.Bookings.book("team/r", &booking{slots: []slot{{pod: booked, node: "node-a"}}})
	l := w.c.opts.Bookings.BookedPods(corelisters.NewPodLister(indexer))
	if all, _ := l.List(labels.Everything()); len(all) != 2 {
		t.Fatalf("listed %d pods, want the real one and the booked one", len(all))
	}
	if sel, _ := l.List(labels.SelectorFromSet(labels.Set{"job": "train"})); len(sel) != 1 || sel[0].Name != "booking-r-0" {
		t.Fatalf("selector listed %v", sel)
	}
	if ns, _ := l.Pods("other").List(labels.Everything()); len(ns) != 0 {
		t.Fatalf("namespace other listed %d pods", len(ns))
	}
	if _, err := l.Pods("team").Get("web"); err != nil {
		t.Fatal(err)
	}
	w.c.opts.Bookings.release("team/r")
	if all, _ := l.List(labels.Everything()); len(all) != 1 {
		t.Fatalf("listed %d pods after release", len(all))
	}
}

// TestPendingConsumersAreDestinedToTheRoomTheyFree: a pending consumer is sent first to the room
// its arrival frees from the booking, on a node or on the stand-in of a claim still launching;
// pods that consume nothing, or are bound already, get no destination.
func TestPendingConsumersAreDestinedToTheRoomTheyFree(t *testing.T) {
	w := newWorld(t)
	_ = w.claims.Add(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "launching"}})
	w.c.opts.Bookings.book("team/r", &booking{slots: []slot{
		{pod: pod("r-0", "", map[string]string{}), node: "node-a"},
		{pod: pod("r-1", "", map[string]string{}), claim: "launching"},
	}})
	consume := map[string]string{autoscalingv1.ConsumeAnnotationKey: "r"}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	bound, first, second, bystander := pod("j-0", "node-a", consume), pod("j-1", "", consume), pod("j-2", "", consume), pod("web", "", nil)
	for _, p := range []*corev1.Pod{bound, first, second, bystander} {
		_ = indexer.Add(p)
	}
	w.c.opts.Bookings.BookedPods(corelisters.NewPodLister(indexer))
	got := w.c.opts.Bookings.Destinations([]*corev1.Pod{first, second, bystander})
	// j-0 took node-a's room; j-1 takes the last room left, the launching claim's; j-2 finds none.
	if len(got) != 1 || got[first.UID] != "launching" {
		t.Fatalf("destinations %v, want only j-1 to the launching claim", got)
	}
	if left := w.c.opts.Bookings.booked([]*corev1.Pod{bound, first, second, bystander}); len(left) != 0 {
		t.Fatalf("%d pods still booked with three consumers of two", len(left))
	}
}
