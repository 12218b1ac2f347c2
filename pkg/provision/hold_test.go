package provision

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// A pod waits for the node launched for it while the claim launches, admitted there by the
// nomination pass or not yet; before the cloud has named the node it waits for none (""); not
// once the claim initialized or is going away, not when the scheduler's preemption nominated it
// elsewhere, and not past LaunchHold.
func TestAPodWaitsForItsLaunchingNodeOnly(t *testing.T) {
	start := time.Now()
	for _, tc := range []struct {
		name      string
		admitted  string
		nominated string
		change    func(*karpv1.NodeClaim, *clocktesting.FakeClock)
		want      bool
		// unnamed: held to no node yet.
		unnamed bool
	}{
		{name: "launching, admitted", admitted: "node-b", want: true},
		{name: "launching, not admitted yet", want: true},
		{name: "launching, no node name yet", admitted: "node-b", want: true, unnamed: true, change: func(c *karpv1.NodeClaim, _ *clocktesting.FakeClock) {
			c.Status.NodeName = ""
		}},
		{name: "initialized", admitted: "node-b", change: func(c *karpv1.NodeClaim, _ *clocktesting.FakeClock) {
			c.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", start)
		}},
		{name: "being deleted", admitted: "node-b", change: func(c *karpv1.NodeClaim, _ *clocktesting.FakeClock) {
			now := metav1.NewTime(start)
			c.DeletionTimestamp = &now
		}},
		{name: "nominated elsewhere by the scheduler's preemption", admitted: "node-b", nominated: "node-x"},
		{name: "nominated to its node", admitted: "node-b", nominated: "node-b", want: true},
		{name: "just inside LaunchHold", admitted: "node-b", want: true, change: func(_ *karpv1.NodeClaim, clk *clocktesting.FakeClock) {
			clk.Step(LaunchHold - time.Second)
		}},
		{name: "past LaunchHold", admitted: "node-b", change: func(_ *karpv1.NodeClaim, clk *clocktesting.FakeClock) {
			clk.Step(LaunchHold + time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-b", CreationTimestamp: metav1.NewTime(start)}}
			claim.Status.NodeName = "node-b"
			if tc.change != nil {
				tc.change(claim, clk)
			}
			claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
			_ = claims.Add(claim)
			p := New(Options{SchedulerName: "tailor", Clock: clk, ClaimLister: karplisters.NewNodeClaimLister(claims)})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"}}
			pod.Status.NominatedNodeName = tc.nominated
			p.mu.Lock()
			p.planned[pod.UID] = claim.Name
			if tc.admitted != "" {
				p.admitted[pod.UID] = tc.admitted
			}
			p.mu.Unlock()
			want := "node-b"
			if tc.unnamed {
				want = ""
			}
			node, held := p.HeldFor(pod)
			if held != tc.want || (held && node != want) {
				t.Errorf("HeldFor = %q, %v; want held %v (to %q)", node, held, tc.want, want)
			}
		})
	}
	// A pod without a plan waits for nothing.
	p := New(Options{SchedulerName: "tailor", Clock: clocktesting.NewFakeClock(start),
		ClaimLister: karplisters.NewNodeClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil))})
	if _, held := p.HeldFor(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "other"}}); held {
		t.Error("a pod without a plan is held")
	}
}

// Released, and Initialized, wake exactly the pending pods planned onto the claim.
func TestReleasedWakesTheClaimsPendingPods(t *testing.T) {
	mine := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default", UID: "uid-mine"}}
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default", UID: "uid-bound"}, Spec: corev1.PodSpec{NodeName: "node-b"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default", UID: "uid-other"}}
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	for _, pod := range []*corev1.Pod{mine, bound, other} {
		_ = pods.Add(pod)
	}
	var woken []string
	p := New(Options{SchedulerName: "tailor", Clock: clocktesting.NewFakeClock(time.Now()), Pods: corelisters.NewPodLister(pods),
		Activate: func(m map[string]*corev1.Pod) {
			for k := range m {
				woken = append(woken, k)
			}
		}})
	p.mu.Lock()
	p.planned[mine.UID], p.planned[bound.UID], p.planned[other.UID] = "claim-b", "claim-b", "claim-c"
	for _, pod := range []*corev1.Pod{mine, bound, other} {
		p.keyOf(pod) // as every write to planned does
	}
	p.mu.Unlock()
	p.Released("claim-b")
	if len(woken) != 1 || woken[0] != "default/mine" {
		t.Errorf("woke %v, want only default/mine", woken)
	}
	// Initializing wakes them too, though no nomination pass has headed them to its node.
	woken = nil
	p.Initialized("claim-b", "node-b")
	if len(woken) != 1 || woken[0] != "default/mine" {
		t.Errorf("initializing woke %v, want only default/mine", woken)
	}
}

// A claim this process just created holds its pods before the informer shows it; and a hold that
// lapses (LaunchHold without the claim initializing) is reported once, so its pods can be woken.
func TestHoldsStartAtCreationAndLapseOnce(t *testing.T) {
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)
	p := New(Options{SchedulerName: "tailor", Clock: clk,
		ClaimLister: karplisters.NewNodeClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil))})
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-new", CreationTimestamp: metav1.NewTime(start)}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"}}
	p.mu.Lock()
	p.planned[pod.UID] = claim.Name
	p.created[claim.Name] = createdClaim{claim: claim, at: start}
	p.mu.Unlock()
	if node, held := p.HeldFor(pod); !held || node != "" {
		t.Errorf("HeldFor = %q, %v before the informer shows the claim; want held to no node yet", node, held)
	}
	claims := []*karpv1.NodeClaim{claim}
	for _, step := range []struct {
		after time.Duration
		want  int
	}{{LaunchHold - time.Second, 0}, {2 * time.Second, 1}, {time.Second, 0}} {
		clk.Step(step.after)
		p.mu.Lock()
		lapsed := p.lapsedHolds(claims, clk.Now())
		p.mu.Unlock()
		if len(lapsed) != step.want {
			t.Errorf("%s after creation: %d holds lapsed, want %d", clk.Since(start), len(lapsed), step.want)
		}
	}
	p.mu.Lock()
	p.lapsedHolds(nil, clk.Now())
	left := len(p.holdLapsed)
	p.mu.Unlock()
	if left != 0 {
		t.Errorf("%d lapsed holds kept for claims that are gone", left)
	}
}
