package expiration

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestTimeLeft(t *testing.T) {
	launchedAt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name        string
		expireAfter karpv1.NillableDuration
		launched    metav1.ConditionStatus
		now         time.Time
		left        time.Duration
		expires     bool
	}{
		{"Never", karpv1.NillableDuration{}, metav1.ConditionTrue, launchedAt.Add(10000 * time.Hour), 0, false},
		{"not launched", karpv1.NewNillableDuration(time.Hour), "", launchedAt.Add(2 * time.Hour), 0, false},
		{"launch failed", karpv1.NewNillableDuration(time.Hour), metav1.ConditionFalse, launchedAt.Add(2 * time.Hour), 0, false},
		{"young", karpv1.NewNillableDuration(720 * time.Hour), metav1.ConditionTrue, launchedAt.Add(700 * time.Hour), 20 * time.Hour, true},
		{"exactly due", karpv1.NewNillableDuration(time.Hour), metav1.ConditionTrue, launchedAt.Add(time.Hour), 0, true},
		{"overdue", karpv1.NewNillableDuration(time.Hour), metav1.ConditionTrue, launchedAt.Add(90 * time.Minute), -30 * time.Minute, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Created an hour before launch: the age counts from the launch.
			claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(launchedAt.Add(-time.Hour))}}
			claim.Spec.ExpireAfter = tc.expireAfter
			if tc.launched != "" {
				claim.SetCondition(karpv1.ConditionTypeLaunched, tc.launched, "Launched", "", launchedAt)
			}
			left, expires := TimeLeft(claim, tc.now)
			if left != tc.left || expires != tc.expires {
				t.Fatalf("TimeLeft = %v, %v; want %v, %v", left, expires, tc.left, tc.expires)
			}
		})
	}
}
