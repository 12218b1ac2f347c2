package expiration

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestTimeLeft(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name        string
		expireAfter karpv1.NillableDuration
		now         time.Time
		left        time.Duration
		expires     bool
	}{
		{"Never", karpv1.NillableDuration{}, created.Add(10000 * time.Hour), 0, false},
		{"young", karpv1.NewNillableDuration(720 * time.Hour), created.Add(700 * time.Hour), 20 * time.Hour, true},
		{"exactly due", karpv1.NewNillableDuration(time.Hour), created.Add(time.Hour), 0, true},
		{"overdue", karpv1.NewNillableDuration(time.Hour), created.Add(90 * time.Minute), -30 * time.Minute, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
			claim.Spec.ExpireAfter = tc.expireAfter
			left, expires := TimeLeft(claim, tc.now)
			if left != tc.left || expires != tc.expires {
				t.Fatalf("TimeLeft = %v, %v; want %v, %v", left, expires, tc.left, tc.expires)
			}
		})
	}
}
