package provision

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// The provisioner's tests build pods, nodes and planners as the planner's own tests do; these are
// the few helpers they share with them, kept here so that neither package's tests import the
// other's.

// One offline simulator (default kube-scheduler profile, fake clientset, no scheduler) serves
// every test in the package; they run one at a time, as one planner owns it.
var (
	simOnce sync.Once
	sim     *simulation.Simulator
	simErr  error
)

func testPlanner(tb testing.TB) *planner.Planner {
	tb.Helper()
	simOnce.Do(func() {
		// The simulator's informers live as long as the test binary.
		sim, simErr = simulation.NewOffline(context.Background(), "tailor")
	})
	if simErr != nil {
		tb.Fatalf("building the offline simulator: %v", simErr)
	}
	return planner.NewPlanner(sim)
}

type podOpt func(*corev1.Pod)

func newPod(name, cpu, mem string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{SchedulerName: "tailor", Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func nodeSelector(key, value string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[key] = value
	}
}

func onNodeNamed(node string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func pods(n int, cpu, mem string) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("p%03d", i), cpu, mem)
	}
	return out
}

// newPool is a NodePool over the whole simulated catalog.
func newPool(name string) planner.Pool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-pool-" + name)}}
	return planner.Pool{NodePool: np, InstanceTypes: fake.Catalog()}
}

// readyNode is a node that exists and takes pods, with the given allocatable cpu and memory.
func readyNode(name, cpu, mem string) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// zoneNodes are three 2-cpu nodes, one per zone, as three launching NodeClaims will become.
func zoneNodes() []*corev1.Node {
	var out []*corev1.Node
	for i, z := range []string{"zone-a", "zone-b", "zone-c"} {
		name := fmt.Sprintf("node-%d", i)
		out = append(out, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: z}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"),
				corev1.ResourceMemory: resource.MustParse("3Gi"), corev1.ResourcePods: resource.MustParse("29")}},
		})
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
