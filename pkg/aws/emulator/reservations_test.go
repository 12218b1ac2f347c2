package emulator_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// reservationFleet asks for one m5.large in zone a through the template, as capacityType.
func reservationFleet(token, template, capacityType string) *ec2.CreateFleetInput {
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant, ClientToken: aws.String(token),
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType)},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: aws.String("subnet-00000000000000001"),
				AvailabilityZone: aws.String(fake.ZoneA)}}}},
	}
	return in
}

func createTemplate(t *testing.T, client *ec2.Client, name string, spec *ec2types.LaunchTemplateCapacityReservationSpecificationRequest, market ec2types.MarketType) {
	t.Helper()
	data := &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001"), CapacityReservationSpecification: spec}
	if market != "" {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: market}
	}
	if _, err := client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data}); err != nil {
		t.Fatal(err)
	}
}

func target(id string) *ec2types.LaunchTemplateCapacityReservationSpecificationRequest {
	return &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(id)}}
}

// TestCapacityReservations: DescribeCapacityReservations filters and counts; launches targeted at a
// reservation use it up and are refused with ReservationCapacityExceeded beyond its count;
// terminating gives a slot back; open reservations take matching on-demand launches that do not
// opt out; capacity blocks need their market type; cancelled and ended reservations take nothing.
func TestCapacityReservations(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	e, cfg := start(t, emulator.Options{Clock: clk})
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	targeted := e.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 1,
		MatchCriteria: emulator.MatchCriteriaTargeted, Tags: map[string]string{"team": "ml"}})
	open := e.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 1, OwnerID: "111111111111"})
	block := e.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 1,
		Type: emulator.ReservationTypeCapacityBlock, MatchCriteria: emulator.MatchCriteriaTargeted, EndTime: clk.Now().Add(time.Hour)})

	describe := func(filters ...ec2types.Filter) map[string]ec2types.CapacityReservation {
		t.Helper()
		out, err := client.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: filters})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]ec2types.CapacityReservation{}
		for _, cr := range out.CapacityReservations {
			m[*cr.CapacityReservationId] = cr
		}
		return m
	}
	if got := describe(ec2types.Filter{Name: aws.String("tag:team"), Values: []string{"ml"}}); len(got) != 1 || got[targeted].InstanceMatchCriteria != "targeted" {
		t.Errorf("by tag: %v", got)
	}
	if got := describe(ec2types.Filter{Name: aws.String("owner-id"), Values: []string{"111111111111"}}); len(got) != 1 || *got[open].OwnerId != "111111111111" {
		t.Errorf("by owner: %v", got)
	}
	if got := describe()[block]; got.ReservationType != ec2types.CapacityReservationTypeCapacityBlock || got.EndDate == nil ||
		!got.EndDate.Equal(clk.Now().Add(time.Hour)) || *got.AvailableInstanceCount != 1 || *got.TotalInstanceCount != 1 {
		t.Errorf("block described as %+v", got)
	}
	if _, err := client.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-nope"}}); errorCode(err) != "InvalidCapacityReservationId.NotFound" {
		t.Errorf("unknown ID: %v", err)
	}

	createTemplate(t, client, "targeted", target(targeted), "")
	createTemplate(t, client, "opt-out", &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone}, "")
	createTemplate(t, client, "plain", nil, "")
	createTemplate(t, client, "block", target(block), ec2types.MarketTypeCapacityBlock)
	launch := func(token, template, capacityType string) (string, string) {
		t.Helper()
		out, err := client.CreateFleet(ctx, reservationFleet(token, template, capacityType))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Instances) == 1 {
			return out.Instances[0].InstanceIds[0], ""
		}
		return "", *out.Errors[0].ErrorCode
	}
	reservationOf := func(id string) string {
		for _, i := range e.Instances() {
			if i.ID == id {
				return i.CapacityReservationID
			}
		}
		return "?"
	}
	first, _ := launch("t1", "targeted", "on-demand")
	if reservationOf(first) != targeted || *describe()[targeted].AvailableInstanceCount != 0 {
		t.Errorf("targeted launch went into %q; reservation now %+v", reservationOf(first), describe()[targeted])
	}
	if _, code := launch("t2", "targeted", "on-demand"); code != "ReservationCapacityExceeded" {
		t.Errorf("launch beyond the count: %q, want ReservationCapacityExceeded", code)
	}
	if _, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{first}}); err != nil {
		t.Fatal(err)
	}
	if n := *describe()[targeted].AvailableInstanceCount; n != 1 {
		t.Errorf("after terminating, %d available, want 1", n)
	}
	if id, _ := launch("t3", "opt-out", "on-demand"); reservationOf(id) != "" {
		t.Errorf("a template opting out launched into %s", reservationOf(id))
	}
	if id, _ := launch("t4", "plain", "on-demand"); reservationOf(id) != open {
		t.Errorf("a plain on-demand launch went into %q, want the open reservation %s", reservationOf(id), open)
	}
	if _, code := launch("t5", "block", "on-demand"); code != "InvalidParameterValue" {
		t.Errorf("capacity block launched as on-demand: %q, want InvalidParameterValue", code)
	}
	if id, _ := launch("t6", "block", "capacity-block"); reservationOf(id) != block {
		t.Errorf("capacity block launch went into %q", reservationOf(id))
	}
	if err := e.CancelCapacityReservation(targeted); err != nil {
		t.Fatal(err)
	}
	if _, code := launch("t7", "targeted", "on-demand"); code != "ReservationCapacityExceeded" {
		t.Errorf("launch into a cancelled reservation: %q", code)
	}
	clk.Step(time.Hour)
	active := describe(ec2types.Filter{Name: aws.String("state"), Values: []string{"active"}})
	if _, ok := active[block]; ok || len(active) != 1 {
		t.Errorf("active after the block's end: %v, want only the open reservation", active)
	}
}
