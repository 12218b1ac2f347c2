package top

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every removal of a NodeClaim is a decision, whatever its cause: the disruption loop's, the
// forceful path's (interruption, expiry, repair) and capacity given back; a notice that removes
// nothing, and Events on Nodes, are not.
func TestDecisionsIncludeForcefulRemovals(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	ev := func(reason, action, kind, name string, ago time.Duration) *eventsv1.Event {
		return &eventsv1.Event{Reason: reason, Action: action, Note: reason + " " + name,
			Regarding: corev1.ObjectReference{Kind: kind, Name: name}, EventTime: metav1.NewMicroTime(at.Add(-ago))}
	}
	got := decisions([]*eventsv1.Event{
		ev("SpotInterruption", "Disrupt", "NodeClaim", "a", time.Minute),
		ev("SpotInterruption", "Disrupt", "Node", "node-a", time.Minute),
		ev("Expired", "Disrupt", "NodeClaim", "b", 2*time.Minute),
		ev("Unhealthy", "Disrupt", "NodeClaim", "c", 3*time.Minute),
		ev("Unneeded", "Provisioning", "NodeClaim", "d", 4*time.Minute),
		ev("RebalanceRecommendation", "Interruption", "NodeClaim", "e", 5*time.Minute),
		ev("Disrupting", "Disrupt", "NodeClaim", "f", 6*time.Minute),
	}, 10)
	var reasons []string
	for _, d := range got {
		reasons = append(reasons, d.Reason)
	}
	want := []string{"SpotInterruption", "Expired", "Unhealthy", "Unneeded", "Disrupting"}
	if len(reasons) != len(want) {
		t.Fatalf("decisions %v, want %v", reasons, want)
	}
	for i := range want {
		if reasons[i] != want[i] {
			t.Fatalf("decisions %v, want %v", reasons, want)
		}
	}
}
