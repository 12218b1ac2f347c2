package emulator_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/userdata"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

func fleetInput(token string) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, it := range []string{"m5.large", "c5.large"} {
		for i, z := range fake.Zones() {
			overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(it),
				SubnetId: aws.String([]string{"subnet-00000000000000001", "subnet-00000000000000002", "subnet-00000000000000003"}[i]), AvailabilityZone: aws.String(z)})
		}
	}
	return &ec2.CreateFleetInput{
		Type:                        ec2types.FleetTypeInstant,
		ClientToken:                 aws.String(token),
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		OnDemandOptions:             &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("tailor/test"), Version: aws.String("$Latest")},
			Overrides:                   overrides}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("kubernetes.io/cluster/tailor"), Value: aws.String("owned")}}}},
	}
}

// TestFleetLifecycle launches through CreateFleet with a capacity shortage on the cheapest
// offering, retries with the same client token, boots the node and terminates it.
func TestFleetLifecycle(t *testing.T) {
	launches := make(chan emulator.Launch, 4)
	clk := clocktesting.NewFakeClock(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	e, cfg := start(t, emulator.Options{Clock: clk, OnLaunch: func(l emulator.Launch) { launches <- l }})
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()

	ud, err := userdata.Render(awsv1.AMIFamilyAL2023, userdata.Node{ClusterName: "tailor", MaxPods: 29,
		Labels: map[string]string{"karpenter.sh/nodepool": "default"}, KubeReserved: map[string]string{"cpu": "70m", "memory": "574Mi"},
		EvictionHard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("tailor/test"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001"), UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(ud))),
			SecurityGroupIds: []string{"sg-00000000000000001"}}}); err != nil {
		t.Fatal(err)
	}
	// c5.large is cheaper on demand than m5.large; on-demand prices are the same in every zone, so
	// the fleet tries the overrides' zones in order.
	e.InjectInsufficientCapacity(cloud.OfferingKey{InstanceType: "c5.large", Zone: fake.ZoneA, CapacityType: "on-demand"})
	out, err := client.CreateFleet(ctx, fleetInput("claim-uid-1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || *out.Errors[0].ErrorCode != "InsufficientInstanceCapacity" || out.Errors[0].LaunchTemplateAndOverrides.Overrides.InstanceType != "c5.large" ||
		*out.Errors[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone != fake.ZoneA {
		t.Fatalf("fleet errors = %+v, want one ICE for c5.large in zone a", out.Errors)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "c5.large" || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("fleet instances = %+v, want one c5.large", out.Instances)
	}
	id := out.Instances[0].InstanceIds[0]

	again, err := client.CreateFleet(ctx, fleetInput("claim-uid-1"))
	if err != nil || again.Instances[0].InstanceIds[0] != id || len(e.Instances()) != 1 {
		t.Fatalf("same client token launched again: %+v, %v, %d instances", again.Instances, err, len(e.Instances()))
	}

	l := <-launches
	node := emulator.NodeFor(l)
	if l.ProviderID() != "aws:///"+fake.ZoneB+"/"+id || node.Labels["karpenter.sh/nodepool"] != "default" || node.Spec.Taints[0] != userdata.UnregisteredTaint {
		t.Errorf("booted node = %+v", node)
	}
	// c5.large: 2 vCPU, 4096 MiB − 7.5% = 3788 MiB; allocatable − 574 Mi − 100 Mi.
	if got := node.Status.Allocatable.Memory().Value() / (1 << 20); got != 3788-574-100 {
		t.Errorf("allocatable memory = %d Mi", got)
	}
	if got := node.Status.Allocatable[corev1.ResourceEphemeralStorage]; got.Value() != 18*(1<<30) {
		t.Errorf("allocatable ephemeral-storage = %s, want 18Gi", got.String())
	}

	described, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/cluster/tailor"}},
		{Name: aws.String("instance-state-name"), Values: []string{"running"}}}})
	if err != nil || len(described.Reservations) != 1 || *described.Reservations[0].Instances[0].InstanceId != id {
		t.Fatalf("describe by cluster tag: %+v, %v", described, err)
	}
	if _, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	gone, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || gone.Reservations[0].Instances[0].State.Name != ec2types.InstanceStateNameTerminated {
		t.Fatalf("terminated instance described as %+v, %v", gone, err)
	}
	clk.Step(2 * time.Hour)
	if _, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}}); errorCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("long-terminated instance: %v, want InvalidInstanceID.NotFound", err)
	}
}

func TestSQS(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	e, cfg := start(t, emulator.Options{Clock: clk})
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	e.CreateQueue("interruptions")
	url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruptions")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")}); errorCode(err) != "QueueDoesNotExist" {
		t.Errorf("missing queue: %v", err)
	}

	// A long poll started before the message arrives returns it.
	received := make(chan *sqs.ReceiveMessageOutput, 1)
	go func() {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 10, VisibilityTimeout: 20})
		if err != nil {
			t.Error(err)
		}
		received <- out
	}()
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: aws.String(`{"hello":"world"}`)}); err != nil {
		t.Fatal(err)
	}
	out := <-received
	if out == nil || len(out.Messages) != 1 || *out.Messages[0].Body != `{"hello":"world"}` {
		t.Fatalf("received %+v", out)
	}
	if visible, inFlight := e.QueueDepth("interruptions"); visible != 0 || inFlight != 1 {
		t.Errorf("depth after receive = %d visible, %d in flight", visible, inFlight)
	}
	// Not deleted: it comes back once its visibility timeout passes.
	clk.Step(21 * time.Second)
	again, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, WaitTimeSeconds: 1})
	if err != nil || len(again.Messages) != 1 {
		t.Fatalf("redelivery: %+v, %v", again, err)
	}
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: out.Messages[0].ReceiptHandle}); errorCode(err) != "ReceiptHandleIsInvalid" {
		t.Errorf("stale receipt handle: %v", err)
	}
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: again.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if visible, inFlight := e.QueueDepth("interruptions"); visible+inFlight != 0 {
		t.Errorf("queue not empty after delete")
	}
}
