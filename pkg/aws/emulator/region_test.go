package emulator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
)

// An emulator set up for another cluster and region tags its subnets and security group for that
// cluster, puts one subnet in each of the region's zones with zone IDs to match, offers every
// type there, and names the cluster's node role.
func TestEmulatorInAnotherRegion(t *testing.T) {
	e, cfg := start(t, emulator.Options{ClusterName: "prod-east", Region: "us-east-1"})
	cfg.Region = "us-east-1"
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	discovery := []ec2types.Filter{{Name: aws.String("tag:" + emulator.DiscoveryTag), Values: []string{"prod-east"}}}
	subnets, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: discovery})
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, s := range subnets.Subnets {
		zones = append(zones, aws.ToString(s.AvailabilityZone)+"="+aws.ToString(s.AvailabilityZoneId))
	}
	if got := strings.Join(zones, ","); got != "us-east-1a=use1-az1,us-east-1b=use1-az2,us-east-1c=use1-az3" {
		t.Errorf("subnets of prod-east: %s", got)
	}
	sgs, err := client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: discovery})
	if err != nil || len(sgs.SecurityGroups) != 1 {
		t.Errorf("security groups of prod-east: %+v, %v", sgs, err)
	}
	offerings, err := client.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZoneId,
		Filters:      []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m6i.large"}}}})
	if err != nil || len(offerings.InstanceTypeOfferings) != 3 || aws.ToString(offerings.InstanceTypeOfferings[0].Location) != "use1-az1" {
		t.Errorf("m6i.large offerings by zone ID: %+v, %v", offerings, err)
	}
	if e.Calls("DescribeSubnets") != 1 {
		t.Errorf("DescribeSubnets was called %d times", e.Calls("DescribeSubnets"))
	}
	if _, err := iam.NewFromConfig(cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-prod-east")}); err != nil {
		t.Errorf("the node role of prod-east: %v", err)
	}
}
