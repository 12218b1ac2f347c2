package nodeclass

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

func TestRequeueAfter(t *testing.T) {
	opts := Options{Interval: 5 * time.Minute, NotReadyInterval: time.Minute, ReservationInterval: 10 * time.Second}
	class := func(ready metav1.ConditionStatus, reservations bool) *awsv1.EC2NodeClass {
		nc := &awsv1.EC2NodeClass{}
		nc.SetCondition(awsv1.ConditionTypeReady, ready, "", "", time.Now())
		if reservations {
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-1"}}
		}
		return nc
	}
	for _, tc := range []struct {
		name string
		opts Options
		nc   *awsv1.EC2NodeClass
		want time.Duration
	}{
		{"ready", opts, class(metav1.ConditionTrue, false), 5 * time.Minute},
		{"ready, selects reservations", opts, class(metav1.ConditionTrue, true), 10 * time.Second},
		{"not ready, selects reservations", opts, class(metav1.ConditionFalse, true), time.Minute},
		{"no reservation interval", Options{Interval: 5 * time.Minute, NotReadyInterval: time.Minute}, class(metav1.ConditionTrue, true), 5 * time.Minute},
	} {
		if got := tc.opts.requeueAfter(tc.nc); got != tc.want {
			t.Errorf("%s: requeue after %s, want %s", tc.name, got, tc.want)
		}
	}
}
