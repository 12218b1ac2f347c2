package provision

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1alpha2"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// podGroupLister serves the given PodGroups as the scheduler's informer would.
func podGroupLister(t *testing.T, groups ...*schedulingv1alpha2.PodGroup) schedulinglisters.PodGroupLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, g := range groups {
		if err := indexer.Add(g); err != nil {
			t.Fatal(err)
		}
	}
	return schedulinglisters.NewPodGroupLister(indexer)
}

func gang(name string, minCount int32) *schedulingv1alpha2.PodGroup {
	return &schedulingv1alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: minCount}}}}
}

// gangPods are n one-CPU pods of the PodGroup group.
func gangPods(group string, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("%s-%02d", group, i), "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
		})
	}
	return out
}

// limitedPool is a NodePool that may launch at most cpu CPUs.
func limitedPool(name, cpu string) planner.Pool {
	pool := newPool(name)
	pool.NodePool.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse(cpu)}
	return pool
}

func plannedCount(plan *planner.Plan) int {
	n := len(plan.FitsExisting)
	for _, c := range plan.Claims {
		n += len(c.Pods)
	}
	return n
}

// TestGangPlannedWholeOrNotAtAll: a gang whose minCount the NodePool's limit cannot hold gets no
// capacity at all, and each pod says why; with room for minCount it is planned; a gang that
// cannot be completed does not take from one that can; pods of no gang are planned one by one.
func TestGangPlannedWholeOrNotAtAll(t *testing.T) {
	ctx := context.Background()
	recorder := events.NewFakeRecorder(100)
	p := &Provisioner{opts: Options{Recorder: recorder, PodGroups: podGroupLister(t, gang("train", 16), gang("tune", 4), gang("half", 8))}}
	plan := func(pool planner.Pool, pending ...[]*corev1.Pod) *planner.Plan {
		var all []*corev1.Pod
		for _, ps := range pending {
			all = append(all, ps...)
		}
		return p.wholeGangs(ctx, testPlanner(t), planner.Input{Pending: all, Pools: []planner.Pool{pool}})
	}

	short := plan(limitedPool("default", "12"), gangPods("train", 16))
	if len(short.Claims) != 0 || len(short.Unplaceable) != 16 {
		t.Fatalf("a 16-pod gang under a 12-CPU limit: %d claims, %d unplaceable; want none launched and 16 explained", len(short.Claims), len(short.Unplaceable))
	}
	if why := short.Unplaceable[0].Reasons[""]; !strings.Contains(why, "PodGroup default/train needs at least 16 pods") {
		t.Errorf("the gang's pods are told %q", why)
	}
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "FailedProvisioning") || !strings.Contains(e, "default/train") {
			t.Errorf("the PodGroup's Event is %q", e)
		}
	default:
		t.Error("no Event on the PodGroup")
	}

	if whole := plan(limitedPool("default", "40"), gangPods("train", 16)); plannedCount(whole) != 16 || len(whole.Unplaceable) != 0 {
		t.Errorf("a 16-pod gang under a 40-CPU limit: %d planned, %d unplaceable; want 16 and none", plannedCount(whole), len(whole.Unplaceable))
	}

	// Under 12 CPUs the 16-pod gang cannot complete; the 4-pod one and the loose pods still get
	// their capacity, which the short gang's pods must not have taken first.
	mixed := plan(limitedPool("default", "12"), gangPods("train", 16), gangPods("tune", 4), pods(3, "1", "1Gi"))
	if plannedCount(mixed) != 7 || len(mixed.Unplaceable) != 16 {
		t.Errorf("two gangs and three loose pods under 12 CPUs: %d planned, %d unplaceable; want 7 (tune and the loose pods) and 16 (train)",
			plannedCount(mixed), len(mixed.Unplaceable))
	}
	for _, u := range mixed.Unplaceable {
		if !strings.HasPrefix(u.Pod.Name, "train-") {
			t.Errorf("%s is unplaceable: %v", u.Pod.Name, u.Reasons)
		}
	}

	// minCount 8 of 16 pods: the scheduler binds once 8 have a place, so 8 placed is whole enough.
	partial := plan(limitedPool("default", "12"), gangPods("half", 16))
	if n := plannedCount(partial); n < 8 || len(partial.Claims) == 0 {
		t.Errorf("a gang of minCount 8 under 12 CPUs: %d planned; want at least 8", n)
	}

	// Two gangs that each fit alone but not together: the older keeps its capacity.
	older, younger := gangPods("pair-a", 6), gangPods("pair-b", 6)
	for _, pod := range younger {
		pod.CreationTimestamp = metav1.Now()
	}
	p.opts.PodGroups = podGroupLister(t, gang("pair-a", 6), gang("pair-b", 6))
	pair := plan(limitedPool("default", "10"), younger, older)
	first := ""
	if len(pair.Unplaceable) > 0 {
		first = pair.Unplaceable[0].Pod.Name
	}
	if plannedCount(pair) != 6 || len(pair.Unplaceable) != 6 || !strings.HasPrefix(first, "pair-b") {
		t.Errorf("two 6-pod gangs under 10 CPUs: %d planned, %d unplaceable (%q first); want pair-a's 6 planned, pair-b's 6 not",
			plannedCount(pair), len(pair.Unplaceable), first)
	}

	// A PodGroup that does not exist, or gang scheduling off: planned like any pod.
	p.opts.PodGroups = nil
	if off := plan(limitedPool("default", "12"), gangPods("train", 16)); plannedCount(off) == 0 {
		t.Error("with gang scheduling off, the pods of a PodGroup got nothing")
	}
}

// TestShortGangGivesBackItsCapacity: a gang left short of its minCount, with some of its pods
// planned onto capacity in flight, keeps that capacity for GangCompletionTimeout; past it, Tailor
// forgets where those pods were sent, so the NodeClaims launched for them are no longer wanted,
// and says so on the PodGroup. A gang that completes meanwhile starts afresh.
func TestShortGangGivesBackItsCapacity(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	recorder := events.NewFakeRecorder(100)
	// The informers show the 15 pods unbound; the round's view shows them on the capacity they
	// are counted on, as it does every pod planned, nominated or assumed somewhere.
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	var held []*corev1.Pod
	for _, pod := range gangPods("train", 15) {
		if err := store.Add(pod); err != nil {
			t.Fatal(err)
		}
		counted := pod.DeepCopy()
		counted.Spec.NodeName = "claim-" + pod.Name
		held = append(held, counted)
	}
	p := New(Options{Clock: clk, Recorder: recorder, PodGroups: podGroupLister(t, gang("train", 16)), GangCompletionTimeout: 5 * time.Minute,
		Pods: corelisters.NewPodLister(store)})
	p.mu.Lock()
	for _, pod := range held {
		p.planned[pod.UID] = "claim-" + pod.Name
	}
	p.mu.Unlock()
	short := []planner.ShortGang{{Gang: planner.Gang{Namespace: "default", Name: "train", MinCount: 16}, Placed: 15, Pods: gangPods("train", 16)[15:]}}

	p.giveBackShortGangs(ctx, held, short)
	clk.Step(4 * time.Minute)
	p.giveBackShortGangs(ctx, held, short)
	if n := plannedOnes(p, held); n != 15 {
		t.Fatalf("4 minutes short: %d of 15 pods still planned, want all (the timeout is 5m)", n)
	}
	clk.Step(2 * time.Minute)
	p.giveBackShortGangs(ctx, held, short)
	if n := plannedOnes(p, held); n != 0 {
		t.Errorf("6 minutes short: %d of 15 pods still planned onto their capacity, want none", n)
	}
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "GangGivenBack") || !strings.Contains(e, "15 of its pods") {
			t.Errorf("the PodGroup's Event is %q", e)
		}
	default:
		t.Error("no GangGivenBack Event")
	}

	// Short again from now: the clock starts anew, and a round in which the gang is whole resets it.
	p.giveBackShortGangs(ctx, held, short)
	clk.Step(4 * time.Minute)
	p.giveBackShortGangs(ctx, held, nil)
	clk.Step(4 * time.Minute)
	p.mu.Lock()
	p.planned[held[0].UID] = "claim-again"
	p.mu.Unlock()
	p.giveBackShortGangs(ctx, held, short)
	if n := plannedOnes(p, held); n != 1 {
		t.Errorf("short, whole, then short again 4 minutes later: %d planned, want the 1 kept", n)
	}
}

func plannedOnes(p *Provisioner, pods []*corev1.Pod) int {
	return ledgerOnes(p, pods, func(uid types.UID) bool { _, ok := p.planned[uid]; return ok })
}

// ledgerOnes counts the pods for which has, read with p.mu held, is true.
func ledgerOnes(p *Provisioner, pods []*corev1.Pod, has func(types.UID) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pod := range pods {
		if has(pod.UID) {
			n++
		}
	}
	return n
}

// TestShortGangKeepsTheNodesItsPendingPodsAreDestinedTo: once the claims launched for a short
// gang's pods have initialized, those pods are pending and counted nowhere, held to their nodes by
// their destinations alone. The round that finds the gang short makes its pods unplaceable, but
// must not forget where they are headed with the other unplaceable pods' nominations: the nodes
// would be given back as unused before the gang's completion timeout, and no GangGivenBack would
// say so (TestGangGivenBackWhenItCannotComplete, when the nodes came up before that round). The
// timeout then gives them back.
func TestShortGangKeepsTheNodesItsPendingPodsAreDestinedTo(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	recorder := events.NewFakeRecorder(100)
	pods := gangPods("ring", 3)
	p := New(Options{Clock: clk, Recorder: recorder, PodGroups: podGroupLister(t, gang("ring", 3)), GangCompletionTimeout: 10 * time.Second})
	p.mu.Lock()
	for _, pod := range pods[:2] {
		p.destined[pod.UID] = destination{node: "node-" + pod.Name, until: clk.Now().Add(NominationWindow)}
	}
	p.mu.Unlock()
	short := []planner.ShortGang{{Gang: planner.Gang{Namespace: "default", Name: "ring", MinCount: 3}, Placed: 2, Pods: pods}}
	round := func() {
		plan := &planner.Plan{}
		p.giveBackShortGangs(ctx, nil, short)
		p.tellShortGangs(ctx, plan, short)
		p.clearStaleNominations(ctx, p.withoutWaitingGangs(plan.Unplaceable))
	}
	destined := func() int {
		return ledgerOnes(p, pods, func(uid types.UID) bool { _, ok := p.destined[uid]; return ok })
	}
	round()
	clk.Step(5 * time.Second)
	round()
	if n := destined(); n != 2 {
		t.Fatalf("5 s short: %d of the gang's pods still destined to their nodes, want 2 (the timeout is 10 s)", n)
	}
	clk.Step(6 * time.Second)
	round()
	if n := destined(); n != 0 {
		t.Errorf("11 s short: %d pods still destined to their nodes, want none", n)
	}
	for {
		select {
		case e := <-recorder.Events:
			if !strings.Contains(e, "GangGivenBack") {
				continue
			}
			if !strings.Contains(e, "2 of its pods") {
				t.Errorf("the PodGroup's Event is %q", e)
			}
			return
		default:
			t.Fatal("no GangGivenBack Event")
		}
	}
}
