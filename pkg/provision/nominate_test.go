package provision

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
)

// A pod a plan finds no place for loses the nomination Tailor wrote for it (harness seed 1778);
// one the scheduler's preemption wrote is the scheduler's.
func TestUnplaceablePodsLoseTailorsNomination(t *testing.T) {
	ctx := context.Background()
	ours := newPod("ours", "500m", "512Mi")
	ours.Status.NominatedNodeName = "n1"
	theirs := newPod("theirs", "500m", "512Mi")
	theirs.Status.NominatedNodeName = "n2"
	kube := kubefake.NewClientset(ours, theirs)
	p := New(Options{SchedulerName: "tailor", Kube: kube, Clock: clocktesting.NewFakeClock(time.Now()), Recorder: events.NewFakeRecorder(10)})
	p.nominations[ours.UID] = "n1"
	p.clearStaleNominations(ctx, []Unplaceable{{Pod: ours}, {Pod: theirs}})
	for name, want := range map[string]string{"ours": "", "theirs": "n2"} {
		got, err := kube.CoreV1().Pods(ours.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.NominatedNodeName != want {
			t.Errorf("pod %s is nominated to %q, want %q", name, got.Status.NominatedNodeName, want)
		}
	}
}
