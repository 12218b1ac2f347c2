package disruption

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/tailor-sh/tailor/test/e2e/env"
)

// A pod that the scheduler places on a node in the same instant that consolidation decides to
// remove that node is never stranded. An empty node is a standing candidate; pods that can only
// run on it (a hostname selector) keep arriving, each deleted by the test once it binds, so the
// node is empty most of the time and a pod is being scheduled onto it most of the time. Every pod
// that binds to the node must stay until the test deletes it: Tailor may refuse to place it (then
// it stays Pending), or keep the node, but never evict it.
func TestConsolidationNeverStrandsAPodAssumedOntoItsNode(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	e.CreateNodePool(env.ConsolidatingPool("default"))
	node := emptyNode(e, "anchor").Name

	var mu sync.Mutex
	deletedByTest := map[string]bool{}
	var stranded []string
	w, err := e.Cluster.Kube.CoreV1().Pods("default").Watch(e.Ctx, metav1.ListOptions{LabelSelector: "app=pinned"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.Spec.NodeName == "" {
				continue
			}
			if ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
				mu.Lock()
				if !deletedByTest[p.Name] {
					stranded = append(stranded, p.Name)
				}
				mu.Unlock()
			}
		}
	}()

	bound, refused, pending := 0, 0, 0
	deadline := time.Now().Add(45 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		name := fmt.Sprintf("pinned-%d", i)
		if _, err := e.Cluster.Kube.CoreV1().Pods("default").Create(e.Ctx, env.PinnedPod(name, node), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitBoundOrRefused(e, name, 2*time.Second)
		switch {
		case p.Spec.NodeName != "":
			bound++
		case strings.Contains(schedulingMessage(p), "being removed by Tailor"):
			refused++
		default:
			pending++
		}
		mu.Lock()
		deletedByTest[name] = true
		mu.Unlock()
		if err := e.Cluster.Kube.CoreV1().Pods("default").Delete(e.Ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if _, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, node, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
	}
	_, err = e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, node, metav1.GetOptions{})
	gone := apierrors.IsNotFound(err)
	time.Sleep(time.Second) // let the watch catch up
	w.Stop()
	<-watched
	t.Logf("%d pods bound to the node, %d refused at Reserve, %d still pending; node removed: %v", bound, refused, pending, gone)
	mu.Lock()
	defer mu.Unlock()
	if len(stranded) > 0 {
		t.Fatalf("pods bound to node %s were evicted by its removal: %v", node, stranded)
	}
	if bound == 0 {
		t.Fatalf("no pod ever bound to the node: the test raced nothing")
	}
}

// waitBoundOrRefused waits until the pod is bound or the scheduler has said why not, and returns
// it as last seen.
func waitBoundOrRefused(e *env.Env, name string, timeout time.Duration) *corev1.Pod {
	e.T.Helper()
	var last *corev1.Pod
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if p.Spec.NodeName != "" || schedulingMessage(p) != "" {
				return p
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last == nil {
		e.T.Fatalf("pod %s never appeared", name)
	}
	return last
}

func schedulingMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}
