package forceful

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
)

// steps records what the Disrupter did, in order.
type steps struct {
	mu  sync.Mutex
	log []string
}

func (s *steps) add(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, step)
}

func (s *steps) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

type fakeClaims struct{ steps *steps }

func (f fakeClaims) Get(_ context.Context, name string, _ metav1.GetOptions) (*karpv1.NodeClaim, error) {
	return claim(name, ""), nil
}

func (f fakeClaims) UpdateStatus(_ context.Context, c *karpv1.NodeClaim, _ metav1.UpdateOptions) (*karpv1.NodeClaim, error) {
	f.steps.add("condition " + c.GetCondition(karpv1.ConditionTypeDisruptionReason).Reason)
	return c, nil
}

func (f fakeClaims) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	f.steps.add("delete " + name)
	return nil
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "fake:///" + name}}
}

func pod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: nodeName}}
}

func claim(name, nodeName string) *karpv1.NodeClaim {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "pool"}}}
	c.Status.NodeName = nodeName
	if nodeName != "" {
		c.Status.ProviderID = "fake:///" + nodeName
	}
	return c
}

// newDisrupter runs informers over a fake clientset holding objs; PlanNow records whether it saw
// the node tainted in the informer the provisioner plans from.
func newDisrupter(t *testing.T, objs ...runtime.Object) (*Disrupter, *steps) {
	t.Helper()
	return newDisrupterConflicting(t, 0, objs...)
}

// newDisrupterConflicting is newDisrupter whose first conflicts patches of a node fail with a
// conflict, as when the kubelet's heartbeat changed it in between.
func newDisrupterConflicting(t *testing.T, conflicts int, objs ...runtime.Object) (*Disrupter, *steps) {
	t.Helper()
	kube := kubefake.NewClientset(objs...)
	s := &steps{}
	kube.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(corev1.Resource("nodes"), a.(k8stesting.PatchAction).GetName(), errors.New("the object has been modified"))
	})
	kube.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.add("taint " + a.(k8stesting.PatchAction).GetName())
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactory(kube, 0)
	nodes, pods := factory.Core().V1().Nodes().Lister(), factory.Core().V1().Pods().Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	d := New(Options{Kube: kube, NodeClaims: fakeClaims{s}, Nodes: nodes, Pods: pods, Clock: clocktesting.NewFakeClock(time.Now()),
		PlanNow: func(context.Context) error {
			ns, _ := nodes.List(everything())
			for _, n := range ns {
				if nodetaint.IsDisrupted(n) {
					s.add("plan, " + n.Name + " tainted")
					return nil
				}
			}
			s.add("plan, nothing tainted")
			return nil
		}})
	return d, s
}

func TestDisruptTaintsThenPlansThenDeletes(t *testing.T) {
	d, s := newDisrupter(t, node("n1"), pod("web", "n1"))
	before := testutil.ToFloat64(metrics.DisruptionDecisions.WithLabelValues("replace", "expiration", "Expired", "pool"))
	if err := d.Disrupt(context.Background(), claim("c1", "n1"), Reason{Method: "Expired", Event: "Expired", Message: "old"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"taint n1", "condition Expired", "plan, n1 tainted", "delete c1"}
	if got := s.get(); !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(metrics.DisruptionDecisions.WithLabelValues("replace", "expiration", "Expired", "pool")); got != before+1 {
		t.Fatalf("replace decisions %v, want %v", got, before+1)
	}
}

// A conflict on the taint is retried from a fresh read at once: the disruption goes on rather
// than failing (an interruption notice would otherwise wait for its redelivery).
func TestDisruptRetriesATaintConflict(t *testing.T) {
	d, s := newDisrupterConflicting(t, 2, node("n1"), pod("web", "n1"))
	if err := d.Disrupt(context.Background(), claim("c1", "n1"), Reason{Method: "Interrupted", Event: "SpotInterruption"}); err != nil {
		t.Fatalf("Disrupt after two conflicts = %v", err)
	}
	want := []string{"taint n1", "taint n1", "taint n1", "condition Interrupted", "plan, n1 tainted", "delete c1"}
	if got := s.get(); !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
}

func TestDisruptCases(t *testing.T) {
	tainted := node("n1")
	tainted.Spec.Taints = []corev1.Taint{karpv1.DisruptedNoScheduleTaint}
	deleting := claim("c1", "n1")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, InterruptedMethod, "the first notice", time.Now())
	cases := []struct {
		name  string
		objs  []runtime.Object
		claim *karpv1.NodeClaim
		want  []string
	}{
		{"already leaving: nothing twice", []runtime.Object{node("n1")}, deleting, nil},
		{"no node yet: nothing to drain or plan", nil, claim("c1", ""), []string{"condition Interrupted", "delete c1"}},
		{"already tainted: not patched again", []runtime.Object{tainted}, claim("c1", "n1"),
			[]string{"condition Interrupted", "plan, n1 tainted", "delete c1"}},
		{"another instance's node of that name is not touched", []runtime.Object{func() *corev1.Node {
			n := node("n1")
			n.Spec.ProviderID = "fake:///other"
			return n
		}()}, claim("c1", "n1"), []string{"condition Interrupted", "delete c1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, s := newDisrupter(t, tc.objs...)
			if err := d.Disrupt(context.Background(), tc.claim, Reason{Method: "Interrupted", Event: "SpotInterruption"}); err != nil {
				t.Fatal(err)
			}
			if got := s.get(); !slices.Equal(got, tc.want) {
				t.Fatalf("steps %v, want %v", got, tc.want)
			}
		})
	}
}

func everything() labels.Selector { return labels.Everything() }

// A claim already being deleted is left alone, but an interruption is still recorded on it: its
// drain must stop holding evictions for want of a place once the cloud is taking the instance.
func TestDisruptRecordsAnInterruptionOfADrainingClaim(t *testing.T) {
	for _, tc := range []struct {
		method string
		want   []string
	}{
		{method: "Expired"},
		{method: InterruptedMethod, want: []string{"condition " + InterruptedMethod}},
	} {
		d, s := newDisrupter(t, node("n1"), pod("web", "n1"))
		c := claim("c1", "n1")
		c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		if err := d.Disrupt(context.Background(), c, Reason{Method: tc.method, Event: tc.method}); err != nil {
			t.Fatal(err)
		}
		if got := s.get(); !slices.Equal(got, tc.want) {
			t.Errorf("%s of a draining claim: steps %v, want %v", tc.method, got, tc.want)
		}
	}
}
