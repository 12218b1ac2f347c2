package schedulerview

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-sh/tailor/pkg/simulation"
)

// One offline simulator (default kube-scheduler profile, fake clientset, no scheduler) serves
// every test in the package, as it serves the provisioner; the tests run one at a time.
var (
	simOnce sync.Once
	shared  *simulation.Simulator
	simErr  error
)

func testSimulator(tb testing.TB) *simulation.Simulator {
	tb.Helper()
	simOnce.Do(func() {
		// The simulator's informers live as long as the test binary.
		shared, simErr = simulation.NewOffline(context.Background(), "tailor")
	})
	if simErr != nil {
		tb.Fatalf("building the offline simulator: %v", simErr)
	}
	return shared
}

type podOpt func(*corev1.Pod)

// newPod is a pending pod of Tailor's scheduler with one container requesting cpu and mem.
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
