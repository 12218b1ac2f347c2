package resolve

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// instanceProfileTTL is how long a profile known to hold the role is trusted without asking IAM
// again (Karpenter's 15 minutes): IAM's control plane is slow and rate-limited.
const instanceProfileTTL = 15 * time.Minute

// InstanceProfileName is the instance profile Tailor manages for a node role: deterministic, so
// every replica and restart finds the same one, and within IAM's 128 characters. The role and the
// region are hashed in because IAM is global: two node classes with the same role share a profile,
// while the same cluster name in two regions, or a changed role, gets a profile of its own.
func InstanceProfileName(cluster, region, role string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(region + "/" + role))
	return fmt.Sprintf("%s_%d", cluster, h.Sum64())
}

// roleName accepts a role name or ARN (arn:aws:iam::123:role/path/name), as Karpenter does.
func roleName(role string) string {
	return role[strings.LastIndex(role, "/")+1:]
}

// instanceProfiles creates and finds the instance profiles for EC2NodeClasses that name a role.
type instanceProfiles struct {
	iam             *iam.Client
	cluster, region string
	clock           clock.Clock

	mu sync.Mutex
	ok map[string]time.Time // profile name → when it was last seen holding its role
}

// profileProblem is a reason the profile cannot be used that the node class status reports; any
// other error means IAM could not be asked.
type profileProblem struct{ reason, message string }

func (p *profileProblem) Error() string { return p.reason + ": " + p.message }

// ensure returns the profile for the role, creating it and adding the role as needed. It is
// idempotent and safe to race with another replica: an EntityAlreadyExists or LimitExceeded from
// a concurrent creator is resolved by reading again.
func (ip *instanceProfiles) ensure(ctx context.Context, role string) (string, error) {
	role = roleName(role)
	name := InstanceProfileName(ip.cluster, ip.region, role)
	ip.mu.Lock()
	seen, cached := ip.ok[name]
	ip.mu.Unlock()
	if cached && ip.clock.Since(seen) < instanceProfileTTL {
		return name, nil
	}
	if _, err := ip.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); err != nil {
		if isIAMNotFound(err) {
			return "", &profileProblem{"RoleNotFound", fmt.Sprintf("IAM role %q does not exist; create it or fix spec.role", role)}
		}
		return "", iamProblem("reading IAM role "+role, err)
	}
	profile, err := ip.get(ctx, name)
	if err != nil {
		return "", err
	}
	if profile == nil {
		_, err := ip.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: ip.tags()})
		if err != nil && !isIAMCode(err, "EntityAlreadyExists") {
			return "", iamProblem("creating instance profile "+name, err)
		}
		klog.FromContext(ctx).Info("Created IAM instance profile", "instanceProfile", name, "role", role)
		if profile, err = ip.get(ctx, name); err != nil {
			return "", err
		}
		if profile == nil {
			return "", fmt.Errorf("instance profile %s was created but cannot be read yet", name)
		}
	}
	has := false
	for _, r := range profile.Roles {
		if aws.ToString(r.RoleName) == role {
			has = true
			continue
		}
		// Someone put another role in Tailor's profile; IAM allows only one, so take it out.
		if _, err := ip.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil && !isIAMNotFound(err) {
			return "", iamProblem("removing role "+aws.ToString(r.RoleName)+" from instance profile "+name, err)
		}
	}
	if !has {
		_, err := ip.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)})
		if err != nil && !isIAMCode(err, "LimitExceeded") {
			return "", iamProblem("adding role "+role+" to instance profile "+name, err)
		}
	}
	ip.mu.Lock()
	ip.ok[name] = ip.clock.Now()
	ip.mu.Unlock()
	return name, nil
}

// get returns the profile, or nil when it does not exist.
func (ip *instanceProfiles) get(ctx context.Context, name string) (*iamtypes.InstanceProfile, error) {
	out, err := ip.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isIAMNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, iamProblem("reading instance profile "+name, err)
	}
	return out.InstanceProfile, nil
}

// tags mark the profile as this cluster's, as Karpenter tags its own, so people and policies can
// tell who made it.
func (ip *instanceProfiles) tags() []iamtypes.Tag {
	return []iamtypes.Tag{
		{Key: aws.String("kubernetes.io/cluster/" + ip.cluster), Value: aws.String("owned")},
		{Key: aws.String("karpenter.sh/managed-by"), Value: aws.String(ip.cluster)},
		{Key: aws.String("topology.kubernetes.io/region"), Value: aws.String(ip.region)},
	}
}

func isIAMNotFound(err error) bool { return isIAMCode(err, "NoSuchEntity") }

func isIAMCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}

// iamProblem turns a refusal (no permission, invalid input) into a status reason, because
// retrying will not help and the node class should say so; the SDK has already retried
// throttling and server errors, which stay errors.
func iamProblem(what string, err error) error {
	var re *awshttp.ResponseError
	refused := errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500
	var ae smithy.APIError
	if throttled := errors.As(err, &ae) && strings.Contains(ae.ErrorCode(), "Throttl"); refused && !throttled {
		return &profileProblem{"InstanceProfileCreationFailed", fmt.Sprintf("%s: %s", what, err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}
