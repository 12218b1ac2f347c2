package budget

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestAllowed(t *testing.T) {
	noon := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	window := func(nodes, schedule string, d time.Duration, reasons ...karpv1.DisruptionReason) karpv1.Budget {
		return karpv1.Budget{Nodes: nodes, Schedule: ptr.To(schedule), Duration: &metav1.Duration{Duration: d}, Reasons: reasons}
	}
	cases := []struct {
		name    string
		budgets []karpv1.Budget
		reason  karpv1.DisruptionReason
		total   int
		now     time.Time
		want    int
		wantErr bool
	}{
		{name: "no budgets defaults to 10% rounded up", total: 11, want: 2},
		{name: "10% of 5 nodes rounds up to 1", budgets: []karpv1.Budget{{Nodes: "10%"}}, total: 5, want: 1},
		{name: "0% allows none", budgets: []karpv1.Budget{{Nodes: "0%"}}, total: 50, want: 0},
		{name: "count", budgets: []karpv1.Budget{{Nodes: "3"}}, total: 50, want: 3},
		{name: "least of the active budgets", budgets: []karpv1.Budget{{Nodes: "3"}, {Nodes: "50%"}}, total: 4, want: 2},
		{name: "inside a blocking window", budgets: []karpv1.Budget{{Nodes: "5"}, window("0", "0 11 * * *", 2*time.Hour)}, total: 10, now: noon, want: 0},
		{name: "after a blocking window", budgets: []karpv1.Budget{{Nodes: "5"}, window("0", "0 9 * * *", 2*time.Hour)}, total: 10, now: noon, want: 5},
		{name: "before a blocking window", budgets: []karpv1.Budget{{Nodes: "5"}, window("0", "0 13 * * *", 2*time.Hour)}, total: 10, now: noon, want: 5},
		{name: "macro schedule", budgets: []karpv1.Budget{window("0", "@daily", 13*time.Hour)}, total: 10, now: noon, want: 0},
		{name: "budget for another reason does not apply", budgets: []karpv1.Budget{{Nodes: "1"}, {Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}},
			reason: karpv1.DisruptionReasonEmpty, total: 10, want: 1},
		{name: "budget for this reason applies", budgets: []karpv1.Budget{{Nodes: "1"}, {Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}},
			reason: karpv1.DisruptionReasonDrifted, total: 10, want: 0},
		{name: "only inactive budgets leave the pool's size", budgets: []karpv1.Budget{window("0", "0 9 * * *", time.Hour)}, total: 7, now: noon, want: 7},
		{name: "a bad schedule fails closed", budgets: []karpv1.Budget{window("5", "not a cron", time.Hour)}, total: 10, now: noon, want: 0, wantErr: true},
		{name: "a bad count fails closed", budgets: []karpv1.Budget{{Nodes: "many"}}, total: 10, want: 0, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
			pool.Spec.Disruption.Budgets = tc.budgets
			reason := tc.reason
			if reason == "" {
				reason = karpv1.DisruptionReasonUnderutilized
			}
			now := tc.now
			if now.IsZero() {
				now = noon
			}
			got, err := Allowed(pool, reason, tc.total, now)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Allowed = %d, want %d", got, tc.want)
			}
		})
	}
}
