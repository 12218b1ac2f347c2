package disruption

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestConsolidatable(t *testing.T) {
	after := func(d time.Duration) karpv1.NillableDuration { return karpv1.NewNillableDuration(d) }
	cases := []struct {
		name        string
		after       karpv1.NillableDuration
		since       time.Duration // before testNow
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantRequeue time.Duration
	}{
		{name: "Never", after: karpv1.NillableDuration{}, since: 24 * time.Hour,
			wantStatus: metav1.ConditionFalse, wantReason: "ConsolidationDisabled", wantMessage: "consolidateAfter: Never"},
		{name: "not elapsed", after: after(10 * time.Minute), since: 4 * time.Minute,
			wantStatus: metav1.ConditionFalse, wantReason: "PodsChangedRecently", wantMessage: "10m0s has not passed", wantRequeue: 6 * time.Minute},
		{name: "a second short", after: after(10 * time.Minute), since: 10*time.Minute - time.Second,
			wantStatus: metav1.ConditionFalse, wantReason: "PodsChangedRecently", wantRequeue: time.Second},
		{name: "just elapsed", after: after(10 * time.Minute), since: 10 * time.Minute,
			wantStatus: metav1.ConditionTrue, wantReason: "Consolidatable", wantMessage: "no pod came or went for consolidateAfter 10m0s"},
		{name: "long elapsed", after: after(10 * time.Minute), since: 3 * time.Hour,
			wantStatus: metav1.ConditionTrue, wantReason: "Consolidatable"},
		{name: "0s is at once", after: after(0), since: 0,
			wantStatus: metav1.ConditionTrue, wantReason: "Consolidatable"},
		{name: "a pod event in the future (clock skew) waits it out", after: after(time.Minute), since: -time.Minute,
			wantStatus: metav1.ConditionFalse, wantReason: "PodsChangedRecently", wantRequeue: 2 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool("default")
			pool.Spec.Disruption.ConsolidateAfter = tc.after
			status, reason, msg, requeue := consolidatable(pool, testNow.Add(-tc.since), testNow)
			if status != tc.wantStatus || reason != tc.wantReason {
				t.Errorf("consolidatable = %s/%s, want %s/%s", status, reason, tc.wantStatus, tc.wantReason)
			}
			if !strings.Contains(msg, tc.wantMessage) {
				t.Errorf("message %q does not say %q", msg, tc.wantMessage)
			}
			if requeue != tc.wantRequeue {
				t.Errorf("requeue = %s, want %s", requeue, tc.wantRequeue)
			}
		})
	}
}
