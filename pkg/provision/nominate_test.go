package provision

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// A pod a plan finds no place for loses the nomination Tailor wrote for it (harness seed 1778),
// and with it the destination PostFilter would hand back; one the scheduler's preemption wrote is
// the scheduler's, and so is one it wrote over Tailor's since the plan read the pod.
func TestUnplaceablePodsLoseTailorsNomination(t *testing.T) {
	ctx := context.Background()
	ours := newPod("ours", "500m", "512Mi")
	ours.Status.NominatedNodeName = "n1"
	theirs := newPod("theirs", "500m", "512Mi")
	theirs.Status.NominatedNodeName = "n2"
	since := newPod("since", "500m", "512Mi")
	since.Status.NominatedNodeName = "n3"
	kube := kubefake.NewClientset(ours, theirs, since)
	clk := clocktesting.NewFakeClock(time.Now())
	p := New(Options{SchedulerName: "tailor", Kube: kube, Clock: clk, Recorder: events.NewFakeRecorder(10)})
	p.nominations[ours.UID] = "n1"
	p.nominations[since.UID] = "n3"
	p.destined[ours.UID] = destination{node: "n1", until: clk.Now().Add(time.Minute)}
	// The scheduler's preemption nominated since elsewhere after the plan read it.
	moved := since.DeepCopy()
	moved.Status.NominatedNodeName = "n4"
	if _, err := kube.CoreV1().Pods(moved.Namespace).UpdateStatus(ctx, moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.clearStaleNominations(ctx, []planner.Unplaceable{{Pod: ours}, {Pod: theirs}, {Pod: since}})
	want := map[string]string{"ours": "", "theirs": "n2", "since": "n4"}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for name, node := range want {
			got, err := kube.CoreV1().Pods(ours.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil || got.Status.NominatedNodeName != node {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		for name := range want {
			got, _ := kube.CoreV1().Pods(ours.Namespace).Get(ctx, name, metav1.GetOptions{})
			t.Errorf("pod %s is nominated to %q, want %q", name, got.Status.NominatedNodeName, want[name])
		}
	}
	if node, ok := p.PlannedNode(ours); ok {
		t.Errorf("PostFilter would still hand pod ours node %s", node)
	}
}

// A pod an earlier plan left to an existing node, and that a plan now finds no place for, is
// headed nowhere: the stranded watch must not report it beside that node (TestKarpenterShapes'
// cpu-limit case, once a sibling had taken its room and the NodePool was at its limit).
func TestUnplaceablePodsAreHeadedNowhere(t *testing.T) {
	pod := newPod("left", "500m", "512Mi")
	p := New(Options{SchedulerName: "tailor", Kube: kubefake.NewClientset(pod), Clock: clocktesting.NewFakeClock(time.Now()),
		Recorder: events.NewFakeRecorder(10)})
	p.mu.Lock()
	p.headFor(pod, "n1")
	p.mu.Unlock()
	p.clearStaleNominations(context.Background(), []planner.Unplaceable{{Pod: pod}})
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.headed[pod.UID]; ok {
		t.Errorf("the pod is still headed for %s", h.node)
	}
}
