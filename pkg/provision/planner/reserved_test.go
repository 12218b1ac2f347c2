package planner

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// withReservation is the fake catalog with a nearly free reserved offering of m5.large in zone a,
// labelled as the AWS provider labels it.
func withReservation(p Pool) Pool {
	var types []*cloud.InstanceType
	for _, it := range p.InstanceTypes {
		if it.Name == "m5.large" {
			c := *it
			c.Offerings = append(append([]cloud.Offering(nil), it.Offerings...), cloud.Offering{Zone: fake.ZoneA,
				CapacityType: karpv1.CapacityTypeReserved, PricePerHour: 0.0000001, Available: true,
				Labels: map[string]string{awsv1.LabelCapacityReservationID: "cr-1", awsv1.LabelCapacityReservationType: "default"}})
			it = &c
		}
		types = append(types, it)
	}
	p.InstanceTypes = types
	return p
}

// TestPlanReservedOfferings: a pool whose capacity-type requirement admits reserved plans its pod
// into the reservation first (it is the cheapest), and the claim keeps on-demand options to fall
// back on; a pool that names no capacity type, or not reserved, never takes it; a pod can select
// the reservation by its labels.
func TestPlanReservedOfferings(t *testing.T) {
	for _, tc := range []struct {
		name         string
		pool         []poolOpt
		pod          []podOpt
		wantReserved bool
	}{
		{name: "pool admits reserved", pool: []poolOpt{requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn,
			karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)}, wantReserved: true},
		{name: "pod selects the reservation type", pool: []poolOpt{requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpExists)},
			pod: []podOpt{nodeSelector(awsv1.LabelCapacityReservationType, "default")}, wantReserved: true},
		{name: "pool names no capacity type", wantReserved: false},
		{name: "pool takes on-demand only", pool: []poolOpt{requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn,
			karpv1.CapacityTypeOnDemand)}, wantReserved: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", "1", "1Gi", tc.pod...)
			plan := testPlanner(t).Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{withReservation(newPool("default", tc.pool...))}})
			if len(plan.Claims) != 1 {
				t.Fatalf("want one claim; got %s", summary(plan))
			}
			first := plan.Claims[0].Options[0]
			reserved, others := false, false
			for _, o := range plan.Claims[0].Options {
				if o.Offering.CapacityType == karpv1.CapacityTypeReserved {
					reserved = true
				} else {
					others = true
				}
			}
			switch {
			case tc.wantReserved && (first.Offering.CapacityType != karpv1.CapacityTypeReserved || first.InstanceType.Name != "m5.large"):
				t.Errorf("cheapest option %s, want the reserved m5.large", optionKey(first.InstanceType, first.Offering))
			case tc.wantReserved && tc.pod == nil && !others:
				t.Error("the claim has no option to fall back on when the reservation is full")
			case tc.pod != nil && others:
				t.Errorf("the pod selects the reservation's label, yet the claim has options without it: %s", summary(plan))
			case !tc.wantReserved && reserved:
				t.Errorf("the pool took the reservation: %s", summary(plan))
			}
		})
	}
}
