package harness

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A reading below a budget is the scheduler's, not Tailor's, only when preemptions of the
// budget's pods in the minute before it account for every pod it lacks.
func TestPreemptionExcusesOnlyTheShortfallItExplains(t *testing.T) {
	now := time.Now()
	preempted := func(pod string, at time.Time) *eventsv1.Event {
		return &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: pod + ".preempted", Namespace: "ns"},
			EventTime:  metav1.NewMicroTime(at), Reason: "Preempted", Note: "Preempted by pod x on node n",
			Regarding: corev1.ObjectReference{Kind: "Pod", Name: pod, Namespace: "ns"},
		}
	}
	kube := fake.NewClientset(preempted("web-a", now.Add(-5*time.Second)), preempted("web-old", now.Add(-10*time.Minute)))
	violations := []PDBViolation{
		{Detail: "one short, one preempted", At: now, Short: 1, Members: []string{"web-a", "web-b"}},
		{Detail: "two short, one preempted", At: now, Short: 2, Members: []string{"web-a", "web-b"}},
		{Detail: "preempted long before", At: now, Short: 1, Members: []string{"web-old"}},
		{Detail: "none preempted", At: now, Short: 1, Members: []string{"web-c"}},
	}
	kept, excused, err := tailorsShare(context.Background(), kube, "ns", violations)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range kept {
		got = append(got, v.Detail)
	}
	want := []string{"two short, one preempted", "preempted long before", "none preempted"}
	if len(got) != len(want) || len(excused) != 1 {
		t.Fatalf("kept %q and excused %q; want kept %q and one excused", got, excused, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("kept %q, want %q", got, want)
		}
	}
}
