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
// labelled as the AWS provider labels it, with room for ten instances.
func withReservation(p Pool) Pool { return withReservationRoom(p, 10) }

// withReservationRoom is withReservation with room for that many instances.
func withReservationRoom(p Pool, room int) Pool {
	var types []*cloud.InstanceType
	for _, it := range p.InstanceTypes {
		if it.Name == "m5.large" {
			c := *it
			c.Offerings = append(append([]cloud.Offering(nil), it.Offerings...), cloud.Offering{Zone: fake.ZoneA,
				CapacityType: karpv1.CapacityTypeReserved, PricePerHour: 0.0000001, Available: true,
				Labels:        map[string]string{awsv1.LabelCapacityReservationID: "cr-1", awsv1.LabelCapacityReservationType: "default"},
				ReservationID: "cr-1", ReservationCapacity: room})
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

// TestPlanGivesAReservationNoMoreClaimsThanItHasRoomFor: three pods that each need a node of
// their own, a reservation with room for two. The first two claims may launch into it, the third
// may not, and lists the on-demand and spot offerings it will launch as; a pool that can launch
// nothing else keeps the reservation on every claim, whose launch then finds it full.
func TestPlanGivesAReservationNoMoreClaimsThanItHasRoomFor(t *testing.T) {
	reservedFirst := func(plan *Plan) (firsts, holding int) {
		for _, pc := range plan.Claims {
			if pc.Options[0].Offering.ReservationID == "cr-1" {
				firsts++
			}
			for _, o := range pc.Options {
				if o.Offering.ReservationID == "cr-1" {
					holding++
					break
				}
			}
		}
		return firsts, holding
	}
	for _, tc := range []struct {
		name         string
		capacity     []string
		room         int
		wantHolding  int
		wantFallback bool
	}{
		{name: "room for two of three", capacity: []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand}, room: 2, wantHolding: 2, wantFallback: true},
		{name: "room for all", capacity: []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand}, room: 5, wantHolding: 3},
		{name: "reserved only", capacity: []string{karpv1.CapacityTypeReserved}, room: 1, wantHolding: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := withReservationRoom(newPool("default", requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, tc.capacity...),
				requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")), tc.room)
			pending := pods(3, "1500m", "1Gi")
			plan := testPlanner(t).Plan(context.Background(), Input{Pending: pending, Pools: []Pool{pool}})
			placedOnce(t, plan, pending)
			if len(plan.Claims) != 3 {
				t.Fatalf("want a claim per pod; got %s", summary(plan))
			}
			firsts, holding := reservedFirst(plan)
			if holding != tc.wantHolding || firsts != tc.wantHolding {
				t.Errorf("%d claims may launch into the reservation (%d list it first), want %d: %s", holding, firsts, tc.wantHolding, summary(plan))
			}
			if last := plan.Claims[2]; tc.wantFallback && last.Options[0].Offering.CapacityType != karpv1.CapacityTypeOnDemand {
				t.Errorf("the claim past the reservation's room launches first as %s, want on-demand", optionKey(last.Options[0].InstanceType, last.Options[0].Offering))
			}
		})
	}
}
