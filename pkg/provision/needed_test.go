package provision

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func createdAt(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

func refused(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
}

// A pod the scheduler refused is planned; so are the untried pods of its burst (created with it
// or up to BurstSlack before) while it first needed capacity within NeedWindow, but not a backlog
// created before that, which the scheduler tries first.
func TestABurstPlansItsUntriedPodsButNotTheBacklogBeforeIt(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clk := clocktesting.NewFakeClock(now)
	p := New(Options{SchedulerName: "tailor", Clock: clk})
	backlog := newPod("backlog", "100m", "100Mi", createdAt(now.Add(-time.Minute)))
	first := newPod("first", "1", "1Gi", createdAt(now), refused)
	sameSecond := newPod("same-second", "1", "1Gi", createdAt(now.Add(-BurstSlack)))
	later := newPod("later", "1", "1Gi", createdAt(now.Add(2*time.Second)))
	candidates := []*corev1.Pod{backlog, first, sameSecond, later}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, pod := range pods {
			out = append(out, pod.Name)
		}
		return out
	}
	if got := names(p.needCapacity([]*corev1.Pod{backlog, sameSecond}, nil)); len(got) != 0 {
		t.Fatalf("planned %v before any pod needed capacity", got)
	}
	want := []string{"first", "same-second", "later"}
	if got := names(p.needCapacity(candidates, nil)); !slices.Equal(got, want) {
		t.Fatalf("planned %v, want %v", got, want)
	}
	clk.Step(NeedWindow + time.Second)
	if got := names(p.needCapacity(candidates, nil)); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("%s after the burst's first need, planned %v, want only the refused pod", NeedWindow+time.Second, got)
	}
}
