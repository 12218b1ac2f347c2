package emulator_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/userdata"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// efaTemplate creates a template whose instances start with n EFA interfaces, one per card.
func efaTemplate(t *testing.T, client *ec2.Client, name string, n int) {
	t.Helper()
	ud, err := userdata.Render(awsv1.AMIFamilyAL2023, userdata.Node{ClusterName: "tailor", MaxPods: 29}, "")
	if err != nil {
		t.Fatal(err)
	}
	data := &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001"), UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(ud)))}
	for card := range n {
		data.NetworkInterfaces = append(data.NetworkInterfaces, ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(int32(card)), DeviceIndex: aws.Int32(min(int32(card), 1)), InterfaceType: aws.String("efa"),
			Groups: []string{"sg-00000000000000001"}, AssociatePublicIpAddress: aws.Bool(false)})
	}
	if _, err := client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data}); err != nil {
		t.Fatal(err)
	}
}

func launchFrom(t *testing.T, client *ec2.Client, template, instanceType, token string) *ec2.CreateFleetOutput {
	t.Helper()
	out, err := client.CreateFleet(context.Background(), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant, ClientToken: aws.String(token),
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(instanceType),
				SubnetId: aws.String("subnet-00000000000000001"), AvailabilityZone: aws.String(fake.ZoneA)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEFAInterfacesAreChecked: EC2 refuses EFA interfaces on a type without EFA and more of them
// than a type takes; what it launches records its interfaces, and its kubelet registers one EFA
// device per interface.
func TestEFAInterfacesAreChecked(t *testing.T) {
	launches := make(chan emulator.Launch, 4)
	clk := clocktesting.NewFakeClock(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	e, cfg := start(t, emulator.Options{Clock: clk, OnLaunch: func(l emulator.Launch) { launches <- l }})
	client := ec2.NewFromConfig(cfg)
	efaTemplate(t, client, "one-efa", 1)
	efaTemplate(t, client, "four-efa", 4)

	for _, tc := range []struct{ template, instanceType, code string }{
		{"one-efa", "m5.large", "InvalidParameterCombination"},     // no EFA at all
		{"four-efa", "c5n.18xlarge", "InvalidParameterValue"},      // one card, one EFA interface
		{"four-efa", "m6i.32xlarge", "InvalidParameterValue"},      // likewise
		{"one-efa", "c6gn.8xlarge", "InvalidParameterCombination"}, // EFA only on the 16xlarge
	} {
		out := launchFrom(t, client, tc.template, tc.instanceType, tc.template+tc.instanceType)
		if len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != tc.code {
			t.Errorf("%s from %s: instances %v, errors %+v; want refused with %s", tc.instanceType, tc.template, out.Instances, out.Errors, tc.code)
		}
	}

	for _, tc := range []struct {
		template, instanceType string
		efa                    int
	}{{"one-efa", "c5n.18xlarge", 1}, {"four-efa", "p4d.24xlarge", 4}} {
		out := launchFrom(t, client, tc.template, tc.instanceType, "ok-"+tc.instanceType)
		if len(out.Instances) != 1 {
			t.Fatalf("%s from %s: errors %+v", tc.instanceType, tc.template, out.Errors)
		}
		var inst emulator.Instance
		for _, i := range e.Instances() {
			if i.ID == out.Instances[0].InstanceIds[0] {
				inst = i
			}
		}
		if len(inst.NetworkInterfaces) != tc.efa || inst.NetworkInterfaces[tc.efa-1].NetworkCardIndex != tc.efa-1 ||
			inst.NetworkInterfaces[0].InterfaceType != "efa" || len(inst.SecurityGroupIDs) != 1 {
			t.Errorf("%s recorded interfaces %+v, groups %v", tc.instanceType, inst.NetworkInterfaces, inst.SecurityGroupIDs)
		}
		clk.Step(time.Second)
		l := <-launches
		if got := l.Capacity[awsv1.ResourceEFA]; got.Value() != int64(tc.efa) {
			t.Errorf("%s registers %s EFA devices, want %d", tc.instanceType, got.String(), tc.efa)
		}
	}

	// Security groups on the template and on its interfaces together are refused at launch.
	if _, err := client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("both"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001"), SecurityGroupIds: []string{"sg-00000000000000001"},
			NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: aws.Bool(true)}}}}); err != nil {
		t.Fatal(err)
	}
	if out := launchFrom(t, client, "both", "m5.large", "both"); len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterCombination" {
		t.Errorf("template with groups in both places: errors %+v", out.Errors)
	}
}

// TestDescribeLaunchTemplateVersions reads a template's interfaces back through the SDK.
func TestDescribeLaunchTemplateVersions(t *testing.T) {
	_, cfg := start(t, emulator.Options{})
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	efaTemplate(t, client, "two-efa", 2)
	out, err := client.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("two-efa"), Versions: []string{"$Latest"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LaunchTemplateVersions) != 1 {
		t.Fatalf("%d versions, want 1", len(out.LaunchTemplateVersions))
	}
	data := out.LaunchTemplateVersions[0].LaunchTemplateData
	if aws.ToString(data.ImageId) != "ami-00000000000000001" || len(data.NetworkInterfaces) != 2 {
		t.Fatalf("template data %+v", data)
	}
	for i, n := range data.NetworkInterfaces {
		if aws.ToInt32(n.NetworkCardIndex) != int32(i) || aws.ToInt32(n.DeviceIndex) != min(int32(i), 1) || aws.ToString(n.InterfaceType) != "efa" ||
			n.AssociatePublicIpAddress == nil || *n.AssociatePublicIpAddress || len(n.Groups) != 1 {
			t.Errorf("interface %d = card %d device %d type %s public %v groups %v", i, aws.ToInt32(n.NetworkCardIndex), aws.ToInt32(n.DeviceIndex),
				aws.ToString(n.InterfaceType), n.AssociatePublicIpAddress, n.Groups)
		}
	}
	if _, err := client.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("nope")}); errorCode(err) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("unknown template: %v", err)
	}
}
