package resolve

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// What one selector term selects, read without writing anything: `tailor doctor` reports, term by
// term, which subnets, security groups and AMIs a class would use.

// Subnet is a subnet a term selects.
type Subnet struct{ ID, Zone string }

// SubnetsOf returns the subnets one subnet selector term selects, most free addresses first.
func (r *Resolver) SubnetsOf(ctx context.Context, term awsv1.SubnetSelectorTerm) ([]Subnet, error) {
	found, err := r.subnets(ctx, []awsv1.SubnetSelectorTerm{term})
	if err != nil {
		return nil, err
	}
	out := make([]Subnet, 0, len(found))
	for _, s := range found {
		out = append(out, Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone)})
	}
	return out, nil
}

// SecurityGroupsOf returns the security groups one security group selector term selects.
func (r *Resolver) SecurityGroupsOf(ctx context.Context, term awsv1.SecurityGroupSelectorTerm) ([]awsv1.SecurityGroup, error) {
	return r.securityGroups(ctx, []awsv1.SecurityGroupSelectorTerm{term})
}

// AMIs returns the images the class's AMI selector terms resolve to, as its status would list
// them; reason is "" when some were found, else "Reason: message" naming the field.
func (r *Resolver) AMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, string, error) {
	return r.amis(ctx, nc)
}
