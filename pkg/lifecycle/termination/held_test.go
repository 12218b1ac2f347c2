package termination

import (
	"context"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/lifecycle/interruption"
)

// placerFunc is a Placer that answers from a function.
type placerFunc func(node string, pods []*corev1.Pod) map[types.UID]string

func (f placerFunc) Unplaceable(_ context.Context, node string, pods []*corev1.Pod) (map[types.UID]string, error) {
	return f(node, pods), nil
}

// A drain evicts only the pods that have a place afterwards: the Placer is asked just before, and
// the pods it names stay until it answers otherwise, or until the node's deadline comes, when
// they are deleted regardless and the Placer is not asked about them. An interrupted instance
// goes whatever the drain does: its pods are evicted without asking.
func TestDrainHoldsTheEvictionsOfPodsWithNoPlace(t *testing.T) {
	now := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	pods := []*corev1.Pod{pod("db-0"), pod("web-0")}
	interrupted := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-a"}}
	interrupted.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, interruption.Method, "spot interruption", now)
	for _, tc := range []struct {
		name     string
		deadline *time.Time
		claim    *karpv1.NodeClaim
		asked    []string
		evicted  []string
		deleted  []string
		again    time.Duration
		// deletedAgo is how long ago the node was deleted; 0 for not deleted.
		deletedAgo time.Duration
	}{
		{name: "no deadline", asked: []string{"db-0", "web-0"}, evicted: []string{"web-0"}, again: placementRetry},
		{name: "deadline come", deadline: &now, deleted: []string{"db-0", "web-0"}},
		{name: "interrupted", claim: interrupted, evicted: []string{"db-0", "web-0"}},
		{name: "deleted a minute ago", deletedAgo: time.Minute, asked: []string{"db-0", "web-0"}, evicted: []string{"web-0"}, again: placementRetry},
		{name: "held as long as it may be", deletedAgo: MaxHold, evicted: []string{"db-0", "web-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			var evicted, deleted []string
			kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() == "eviction" {
					evicted = append(evicted, a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName())
				}
				return true, nil, nil
			})
			kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
				return true, nil, nil
			})
			var asked []string
			c := &Controller{opts: Options{Kube: kube, Recorder: events.NewFakeRecorder(10), Clock: clocktesting.NewFakeClock(now),
				Placer: placerFunc(func(_ string, pods []*corev1.Pod) map[types.UID]string {
					for _, p := range pods {
						asked = append(asked, p.Name)
					}
					return map[types.UID]string{"uid-db-0": "no node has the port"}
				})}}
			node := node.DeepCopy()
			if tc.deletedAgo > 0 {
				node.DeletionTimestamp = &metav1.Time{Time: now.Add(-tc.deletedAgo)}
			}
			again, err := c.drain(context.Background(), node, tc.claim, pods, tc.deadline)
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(evicted)
			sort.Strings(deleted)
			if again != tc.again || !equal(asked, tc.asked) || !equal(evicted, tc.evicted) || !equal(deleted, tc.deleted) {
				t.Errorf("drain: asked %v, evicted %v, deleted %v, again %s; want asked %v, evicted %v, deleted %v, again %s",
					asked, evicted, deleted, again, tc.asked, tc.evicted, tc.deleted, tc.again)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A drain retried within placementRetry reuses its node's last re-check for the pods it weighed,
// and asks again for a pod it did not, or once the answer is older.
func TestRecheckIsReusedForPlacementRetry(t *testing.T) {
	now := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(now)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	asks := 0
	c := &Controller{opts: Options{Clock: clock, Placer: placerFunc(func(_ string, _ []*corev1.Pod) map[types.UID]string {
		asks++
		return map[types.UID]string{"uid-db-0": "no node has the port"}
	})}}
	ask := func(pods ...*corev1.Pod) map[types.UID]string {
		return c.held(context.Background(), node, nil, pods, nil, clock.Now())
	}
	first := ask(pod("db-0"), pod("web-0"))
	clock.Step(time.Second)
	again := ask(pod("db-0"))
	if asks != 1 || first["uid-db-0"] == "" || again["uid-db-0"] == "" {
		t.Fatalf("asked %d times; answers %v then %v; want one ask, db-0 held both times", asks, first, again)
	}
	ask(pod("db-0"), pod("cache-0"))
	if asks != 2 {
		t.Fatalf("a pod the last re-check did not weigh was not re-checked (%d asks)", asks)
	}
	clock.Step(placementRetry)
	ask(pod("db-0"))
	if asks != 3 {
		t.Fatalf("an answer older than placementRetry was reused (%d asks)", asks)
	}
}
