package schedulerview

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

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
		ctx := context.Background() // lives as long as the test binary
		client := kubefake.NewClientset()
		factory := informers.NewSharedInformerFactory(client, 0)
		profile, err := simulation.DefaultProfile("tailor")
		if err != nil {
			simErr = err
			return
		}
		shared, simErr = simulation.New(ctx, profile, simulation.Deps{Client: client, InformerFactory: factory})
		factory.Start(ctx.Done())
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok && simErr == nil {
				simErr = fmt.Errorf("informer for %v did not sync", typ)
			}
		}
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
