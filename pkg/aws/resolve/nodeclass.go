// Package resolve reads what an EC2NodeClass's selector terms select right now (subnets, security
// groups, AMIs, capacity reservations) and manages the instance profile for its role. It is apart
// from the provider (pkg/aws) because the provider imports client-go: the resolver's fuzz target
// (FuzzSelectorTerms), built here with only the AWS SDK and the emulator, is cheap enough to
// build with coverage instrumentation for make test (FUZZ_SHORT_PACKAGES in the Makefile).
package resolve

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/userdata"
)

// Resolver turns an EC2NodeClass's selector terms into what they select right now: subnets,
// security groups, AMIs and the instance profile, as the node class status reports them. It
// reads EC2 and SSM and writes nothing there; the one thing it creates is the IAM instance
// profile for spec.role (idempotently, as Karpenter's node class controller does), so that the
// status controller and the provider can both use it and either one makes a class usable.
type Resolver struct {
	ec2               *ec2.Client
	ssm               *ssm.Client
	profiles          *instanceProfiles
	kubernetesVersion string
	clock             clock.Clock
	// describingReservations, when set, is called as capacity reservations are described; the
	// function it returns is told each one's available count. The provider counts launches into
	// reservations from there, and needs to know when the describe began (see reservationTracker).
	describingReservations func() func(id string, available int)
}

// New builds a resolver on the SDK configuration; cluster names the instance profiles it
// manages. describingReservations may be nil.
func New(cfg aws.Config, cluster, kubernetesVersion string, clk clock.Clock, describingReservations func() func(id string, available int)) *Resolver {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Resolver{ec2: ec2.NewFromConfig(cfg), ssm: ssm.NewFromConfig(cfg), kubernetesVersion: kubernetesVersion, clock: clk,
		describingReservations: describingReservations,
		profiles:               &instanceProfiles{iam: iam.NewFromConfig(cfg), cluster: cluster, region: cfg.Region, clock: clk, ok: map[string]time.Time{}}}
}

// Resolution is a node class with its status filled in, plus what the status has no field for.
type Resolution struct {
	NodeClass *awsv1.EC2NodeClass
	// FreeIPs per subnet ID, to launch into the roomiest subnet of a zone.
	FreeIPs map[string]int64
}

// Ready reports whether instances can be launched from the node class, and if not, why.
func (r *Resolution) Ready() (bool, string) {
	c := r.NodeClass.GetCondition(awsv1.ConditionTypeReady)
	if c != nil && c.Status == metav1.ConditionTrue {
		return true, ""
	}
	if c == nil {
		return false, "not resolved"
	}
	return false, fmt.Sprintf("%s: %s", c.Reason, c.Message)
}

// Resolve returns a copy of nc with status subnets, security groups, AMIs, instance profile and
// conditions set; Ready is False with the failing part as its reason when something selects
// nothing. An error means AWS could not be asked (and the status would be a guess).
func (r *Resolver) Resolve(ctx context.Context, nc *awsv1.EC2NodeClass) (*Resolution, error) {
	out := nc.DeepCopy()
	now := r.clock.Now()
	res := &Resolution{NodeClass: out, FreeIPs: map[string]int64{}}

	subnets, err := r.subnets(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		return nil, err
	}
	out.Status.Subnets = nil
	for _, s := range subnets {
		out.Status.Subnets = append(out.Status.Subnets, awsv1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)})
		res.FreeIPs[aws.ToString(s.SubnetId)] = int64(aws.ToInt32(s.AvailableIpAddressCount))
	}
	setFound(out, awsv1.ConditionTypeSubnetsReady, len(subnets) > 0, "SubnetsNotFound", "subnetSelectorTerms match no subnet", now)

	groups, err := r.securityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		return nil, err
	}
	out.Status.SecurityGroups = groups
	setFound(out, awsv1.ConditionTypeSecurityGroupsReady, len(groups) > 0, "SecurityGroupsNotFound", "securityGroupSelectorTerms match no security group", now)

	amis, reason, err := r.amis(ctx, out)
	if err != nil {
		return nil, err
	}
	out.Status.AMIs = amis
	setFound(out, awsv1.ConditionTypeAMIsReady, reason == "", firstWord(reason), reason, now)

	if err := r.instanceProfile(ctx, out, now); err != nil {
		return nil, err
	}
	// Selecting no reservation is not a fault, as in Karpenter: the class launches on-demand and
	// spot capacity, and reservations the terms select later are offered once they are described.
	out.Status.CapacityReservations = nil
	if len(nc.Spec.CapacityReservationSelectorTerms) > 0 {
		reservations, err := r.capacityReservations(ctx, nc.Spec.CapacityReservationSelectorTerms)
		if err != nil {
			return nil, err
		}
		out.Status.CapacityReservations = reservations
	}
	out.SetCondition(awsv1.ConditionTypeCapacityReservationsReady, metav1.ConditionTrue, "", "", now)
	// Karpenter validates with dry-run launches; Tailor checks what it would send that no
	// launch could fix, and relies on launch errors for the rest.
	if reason, message := validate(nc); reason != "" {
		out.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, reason, message, now)
	} else {
		out.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "", "", now)
	}
	return res, nil
}

// validate finds what would make every launch from the class fail: user data that cannot be
// merged for its AMI family. It returns the condition's reason and a message naming the field,
// or "" when the class is launchable.
func validate(nc *awsv1.EC2NodeClass) (reason, message string) {
	if err := userdata.Validate(nc.AMIFamily(), aws.ToString(nc.Spec.UserData)); err != nil {
		return "UserDataInvalid", err.Error()
	}
	return "", ""
}

// instanceProfile sets the status instance profile: the one given, or the one Tailor manages
// for spec.role.
func (r *Resolver) instanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass, now time.Time) error {
	switch {
	case nc.Spec.InstanceProfile != nil:
		nc.Status.InstanceProfile = *nc.Spec.InstanceProfile
	case nc.Spec.Role != "":
		name, err := r.profiles.ensure(ctx, nc.Spec.Role)
		var problem *profileProblem
		if errors.As(err, &problem) {
			nc.Status.InstanceProfile = ""
			nc.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, problem.reason, problem.message, now)
			return nil
		}
		if err != nil {
			return err
		}
		nc.Status.InstanceProfile = name
	default:
		nc.Status.InstanceProfile = ""
		nc.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, "InstanceProfileNotSet",
			"set spec.role (Tailor manages the instance profile) or spec.instanceProfile", now)
		return nil
	}
	nc.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionTrue, "", "", now)
	return nil
}

func setFound(nc *awsv1.EC2NodeClass, cond string, ok bool, reason, message string, now time.Time) {
	if ok {
		nc.SetCondition(cond, metav1.ConditionTrue, "", "", now)
		return
	}
	nc.SetCondition(cond, metav1.ConditionFalse, reason, message, now)
}

// firstWord is the CamelCase reason at the start of a "Reason: message" string.
func firstWord(s string) string {
	reason, _, _ := strings.Cut(s, ":")
	return reason
}

// tagFilters turns selector tags into EC2 filters; "*" means the key with any value.
func tagFilters(tags map[string]string) []ec2types.Filter {
	var out []ec2types.Filter
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

// subnets ORs the terms, and orders the result by free addresses (most first), then ID.
func (r *Resolver) subnets(ctx context.Context, terms []awsv1.SubnetSelectorTerm) ([]ec2types.Subnet, error) {
	seen := map[string]ec2types.Subnet{}
	for _, term := range terms {
		in := &ec2.DescribeSubnetsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in = &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("subnet-id"), Values: []string{term.ID}}}}
		}
		for p := ec2.NewDescribeSubnetsPaginator(r.ec2, in); p.HasMorePages(); {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing subnets: %w", err)
			}
			for _, s := range out.Subnets {
				seen[aws.ToString(s.SubnetId)] = s
			}
		}
	}
	list := make([]ec2types.Subnet, 0, len(seen))
	for _, s := range seen {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := aws.ToInt32(list[i].AvailableIpAddressCount), aws.ToInt32(list[j].AvailableIpAddressCount)
		if a != b {
			return a > b
		}
		return aws.ToString(list[i].SubnetId) < aws.ToString(list[j].SubnetId)
	})
	return list, nil
}

func (r *Resolver) securityGroups(ctx context.Context, terms []awsv1.SecurityGroupSelectorTerm) ([]awsv1.SecurityGroup, error) {
	seen := map[string]awsv1.SecurityGroup{}
	for _, term := range terms {
		in := &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(term.Tags)}
		switch {
		case term.ID != "":
			in.Filters = []ec2types.Filter{{Name: aws.String("group-id"), Values: []string{term.ID}}}
		case term.Name != "":
			in.Filters = []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{term.Name}}}
		}
		for p := ec2.NewDescribeSecurityGroupsPaginator(r.ec2, in); p.HasMorePages(); {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups: %w", err)
			}
			for _, g := range out.SecurityGroups {
				seen[aws.ToString(g.GroupId)] = awsv1.SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName)}
			}
		}
	}
	out := make([]awsv1.SecurityGroup, 0, len(seen))
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, seen[id])
	}
	return out, nil
}
