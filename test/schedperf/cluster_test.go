package schedperf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// zones are the zones the nodes are spread over, round robin, as scheduler_perf's topology
// workloads spread theirs.
var zones = []string{"us-west-2a", "us-west-2b", "us-west-2c"}

// cluster is an in-process control plane (embedded etcd and kube-apiserver) with Tailor's CRDs
// and nothing that schedules yet.
type cluster struct {
	config     *rest.Config
	kube       kubernetes.Interface
	tailor     clientset.Interface
	kubeconfig string
	dir        string
	// writer creates and deletes pods without client-side rate limits, so that the schedulers,
	// not the client, are what a benchmark measures.
	writer kubernetes.Interface
}

func startCluster(ctx context.Context, b *testing.B) *cluster {
	b.Helper()
	dir := b.TempDir()
	cp, err := sandbox.StartControlPlane(b, etcdDir(b))
	if err != nil {
		b.Fatalf("starting the control plane: %v", err)
	}
	b.Cleanup(cp.Stop)
	c := &cluster{config: cp.Config, dir: dir, kubeconfig: filepath.Join(dir, "kubeconfig")}
	if c.kube, err = kubernetes.NewForConfig(cp.Config); err != nil {
		b.Fatal(err)
	}
	unlimited := rest.CopyConfig(cp.Config)
	unlimited.QPS, unlimited.Burst = -1, 0
	if c.writer, err = kubernetes.NewForConfig(unlimited); err != nil {
		b.Fatal(err)
	}
	crs := rest.CopyConfig(cp.Config)
	crs.ContentType = "application/json"
	if c.tailor, err = clientset.NewForConfig(crs); err != nil {
		b.Fatal(err)
	}
	if err := sandbox.InstallCRDs(ctx, cp.Config); err != nil {
		b.Fatalf("installing Tailor's CRDs: %v", err)
	}
	if err := sandbox.WriteKubeconfig(cp.Config, c.kubeconfig); err != nil {
		b.Fatal(err)
	}
	return c
}

// etcdDir is where etcd keeps its data: in memory (/dev/shm) where the machine has it. Every
// binding is an etcd write, and on a shared disk etcd's fsync, not either scheduler, would set
// the pace; scheduler_perf's etcd runs on tmpfs for the same reason.
func etcdDir(b *testing.B) string {
	if dir, err := os.MkdirTemp("/dev/shm", "schedperf-etcd-"); err == nil {
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return filepath.Join(b.TempDir(), "etcd")
}

// node is a node of scheduler_perf's default shape (4 CPUs, 32 GiB, 110 pods), Ready, in zone
// i mod 3. With kwok set it carries kwok's annotation, and kwok plays its kubelet.
func node(i int, kwok bool) *corev1.Node {
	name := fmt.Sprintf("node-%04d", i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname:           name,
			corev1.LabelTopologyZone:       zones[i%len(zones)],
			corev1.LabelOSStable:           "linux",
			corev1.LabelArchStable:         "amd64",
			corev1.LabelInstanceTypeStable: "m5.xlarge",
		}},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			Phase: corev1.NodeRunning,
		},
	}
	if kwok {
		n.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
	}
	return n
}

// createNodes creates n nodes and waits until the API server lists them all Ready.
func (c *cluster) createNodes(ctx context.Context, n int, kwok bool) error {
	err := parallel(ctx, n, func(ctx context.Context, i int) error {
		_, err := c.writer.CoreV1().Nodes().Create(ctx, node(i, kwok), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating nodes: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range list.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
}

// createPods creates pods from 32 goroutines at once.
func (c *cluster) createPods(ctx context.Context, pods []*corev1.Pod) error {
	return parallel(ctx, len(pods), func(ctx context.Context, i int) error {
		_, err := c.writer.CoreV1().Pods(pods[i].Namespace).Create(ctx, pods[i], metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", pods[i].Namespace, pods[i].Name, err)
		}
		return nil
	})
}

// deletePods removes the pods selector selects at once (no kubelet needs to confirm it) and
// waits until they are gone, so the next phase starts on the same empty nodes. A collection of
// thousands may take the API server longer than a request may last; it goes on deleting, and the
// call is repeated until none is left.
func (c *cluster) deletePods(ctx context.Context, selector string) error {
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.kube.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
		if err == nil && len(list.Items) == 0 {
			return true, nil
		}
		last = c.writer.CoreV1().Pods(metav1.NamespaceDefault).DeleteCollection(ctx, opts, metav1.ListOptions{LabelSelector: selector})
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("deleting pods %q: %w (last: %v)", selector, err, last)
	}
	return nil
}

// parallel runs do for 0..n-1 on 32 goroutines and returns the first error.
func parallel(ctx context.Context, n int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				if err := do(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
