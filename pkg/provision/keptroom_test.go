package provision

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// TestRoomIsKeptForPodsOnTheirWay checks which pods' room KeptRoom keeps on which node: pods
// planned onto a claim once its node is named, pods still on their way to a node that came up
// for them, and pods a plan put on an existing node, each until its window ends; nothing on the
// node a pod is on its way to itself, nor the room of pods of lower priority.
func TestRoomIsKeptForPodsOnTheirWay(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	claimIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	claim := func(name, node string) {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Status.NodeName = node
		if err := claimIndex.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	claim("launching", "node-launching")
	claim("unnamed", "")
	p := New(Options{SchedulerName: "tailor", Clock: clk, ClaimLister: karplisters.NewNodeClaimLister(claimIndex)})
	urgent := func(pod *corev1.Pod) { pod.Spec.Priority = ptr.To[int32](1000) }
	onLaunching, onUnnamed := newPod("on-launching", "1", "1Gi"), newPod("on-unnamed", "1", "1Gi")
	onUp, alsoOnUp, lapsed := newPod("on-up", "2", "2Gi"), newPod("also-on-up", "1", "1Gi"), newPod("lapsed", "1", "1Gi")
	stranger, vip := newPod("stranger", "1", "1Gi"), newPod("vip", "1", "1Gi", urgent)
	onExisting, longAgo := newPod("on-existing", "1", "1Gi"), newPod("long-ago", "1", "1Gi")

	if got := p.KeptRoom(stranger); got != nil {
		t.Fatalf("KeptRoom with no plan = %v, want nil", got)
	}
	p.mu.Lock()
	p.noteKept([]*corev1.Pod{onLaunching, onUnnamed, onUp, alsoOnUp, lapsed, onExisting, longAgo})
	p.headFor(onExisting, "node-existing")
	p.headed[longAgo.UID] = heading{node: "node-existing", since: clk.Now().Add(-NominationWindow - time.Second)}
	p.planned[onLaunching.UID] = "launching"
	p.planned[onUnnamed.UID] = "unnamed"
	p.destined[onUp.UID] = destination{node: "node-up", until: clk.Now().Add(NominationWindow)}
	p.destined[alsoOnUp.UID] = destination{node: "node-up", until: clk.Now().Add(NominationWindow)}
	p.destined[lapsed.UID] = destination{node: "node-up", until: clk.Now().Add(-time.Second)}
	p.mu.Unlock()

	want := func(pods ...*corev1.Pod) []scheduling.Kept {
		var out []scheduling.Kept
		for _, pod := range pods {
			r := scheduling.PodRequests(pod)
			out = append(out, scheduling.Kept{UID: pod.UID, MilliCPU: r.Cpu().MilliValue(), Memory: r.Memory().Value(), Pod: pod})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want map[string][]scheduling.Kept
	}{
		{name: "a pod with no plan", pod: stranger, want: map[string][]scheduling.Kept{"node-launching": want(onLaunching),
			"node-up": want(onUp, alsoOnUp), "node-existing": want(onExisting)}},
		{name: "a pod on its way is kept from other nodes' room only", pod: onUp, want: map[string][]scheduling.Kept{"node-launching": want(onLaunching),
			"node-existing": want(onExisting)}},
		{name: "a pod put on an existing node is kept from other nodes' room only", pod: onExisting, want: map[string][]scheduling.Kept{
			"node-launching": want(onLaunching), "node-up": want(onUp, alsoOnUp)}},
		{name: "a pod of higher priority", pod: vip, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := p.KeptRoom(tc.pod)
			if len(got) != len(tc.want) {
				t.Fatalf("KeptRoom = %v, want %v", got, tc.want)
			}
			for node, kept := range tc.want {
				if !sameKept(got[node], kept) {
					t.Fatalf("KeptRoom on %s = %v, want %v", node, got[node], kept)
				}
			}
		})
	}
}

// sameKept compares two lists of kept room in any order.
func sameKept(a, b []scheduling.Kept) bool {
	if len(a) != len(b) {
		return false
	}
	// By what the room is and whose, and whether it excludes: Excludes, a func, has no equality.
	type room struct {
		uid              types.UID
		milliCPU, memory int64
		pod              *corev1.Pod
		excludes         bool
	}
	seen := map[room]int{}
	for _, k := range a {
		seen[room{k.UID, k.MilliCPU, k.Memory, k.Pod, k.Excludes != nil}]++
	}
	for _, k := range b {
		r := room{k.UID, k.MilliCPU, k.Memory, k.Pod, k.Excludes != nil}
		if seen[r]--; seen[r] < 0 {
			return false
		}
	}
	return true
}

// TestKeptRoomIsForgottenOnceItsPodBinds checks that a bound pod keeps no room: it is not noted,
// and a pod noted while pending is forgotten by the plan after it binds.
func TestKeptRoomIsForgottenOnceItsPodBinds(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := New(Options{SchedulerName: "tailor", Clock: clk, ClaimLister: karplisters.NewNodeClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil))})
	pending, bound := newPod("pending", "1", "1Gi"), newPod("bound", "1", "1Gi")
	bound.Spec.NodeName = "node-a"
	p.mu.Lock()
	p.noteKept([]*corev1.Pod{pending, bound})
	_, boundNoted := p.keptBy[bound.UID]
	_, pendingNoted := p.keptBy[pending.UID]
	p.mu.Unlock()
	if boundNoted || !pendingNoted {
		t.Fatalf("noted bound=%v pending=%v, want only the pending pod", boundNoted, pendingNoted)
	}
	nowBound := pending.DeepCopy()
	nowBound.Spec.NodeName = "node-a"
	p.forgetStale(nil, []*corev1.Pod{nowBound}, nil, p.listed())
	p.mu.Lock()
	_, still := p.keptBy[pending.UID]
	p.mu.Unlock()
	if still {
		t.Fatal("a pod that bound still has room kept for it")
	}
}

// TestKeptRoomCarriesWhatItsPodExcludes: the room noted for a pod with required anti-affinity
// says what that pod keeps out of its node's domain, for the plugin's Filter; a pod without
// any excludes nothing.
func TestKeptRoomCarriesWhatItsPodExcludes(t *testing.T) {
	p := New(Options{SchedulerName: "tailor", Clock: clocktesting.NewFakeClock(time.Now())})
	apart, plain := newPod("apart", "1", "1Gi"), newPod("plain", "1", "1Gi")
	apart.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "small"}}}}}}
	small := newPod("small", "100m", "1Mi")
	small.Labels = map[string]string{"app": "small"}
	p.mu.Lock()
	p.noteKept([]*corev1.Pod{apart, plain})
	kept := p.keptBy
	p.mu.Unlock()
	if ex := kept[apart.UID].room.Excludes; ex == nil || !slices.Equal(ex(small), []string{corev1.LabelTopologyZone}) || len(ex(plain)) != 0 {
		t.Errorf("the room of a pod with zone anti-affinity against app=small does not exclude exactly small, by zone")
	}
	if kept[plain.UID].room.Excludes != nil {
		t.Errorf("the room of a pod with no anti-affinity excludes")
	}
}
