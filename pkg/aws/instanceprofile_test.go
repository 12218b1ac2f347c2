package aws_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
)

func roleClass(role string) *awsv1.EC2NodeClass {
	nc := defaultClass()
	nc.Spec.InstanceProfile, nc.Spec.Role = nil, role
	return nc
}

func resolveProfile(t *testing.T, e *env, nc *awsv1.EC2NodeClass) (string, *metav1.Condition) {
	t.Helper()
	res, err := e.provider.Resolver().Resolve(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	return res.NodeClass.Status.InstanceProfile, res.NodeClass.GetCondition(awsv1.ConditionTypeInstanceProfileReady)
}

// TestInstanceProfileForRole: spec.role gets a profile named from cluster, region and role,
// created once, tagged as the cluster's, holding the role; it is then trusted for 15 minutes and
// repaired if someone swaps its role.
func TestInstanceProfileForRole(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	role := emulator.NodeRoleName(cluster)
	want := resolve.InstanceProfileName(cluster, emulator.Region, role)
	if len(want) > 128 || want == resolve.InstanceProfileName(cluster, "eu-west-1", role) || want == resolve.InstanceProfileName(cluster, emulator.Region, "other") {
		t.Fatalf("profile name %q is not specific to region and role, or too long", want)
	}

	name, cond := resolveProfile(t, e, roleClass(role))
	if name != want || cond.Status != metav1.ConditionTrue {
		t.Fatalf("instance profile %q (%s/%s), want %q and True", name, cond.Status, cond.Reason, want)
	}
	profiles := e.emu.InstanceProfiles()
	if len(profiles) != 1 || profiles[0].Name != want || len(profiles[0].Roles) != 1 || profiles[0].Roles[0] != role ||
		profiles[0].Tags["kubernetes.io/cluster/"+cluster] != "owned" {
		t.Fatalf("IAM holds %+v", profiles)
	}

	// A role given as an ARN is the same role, and a cached profile costs no IAM call.
	calls := e.emu.Calls("GetInstanceProfile")
	if name, _ := resolveProfile(t, e, roleClass("arn:aws:iam::"+emulator.AccountID+":role/"+role)); name != want {
		t.Errorf("role ARN resolved to %q", name)
	}
	if e.emu.Calls("GetInstanceProfile") != calls || e.emu.Calls("CreateInstanceProfile") != 1 {
		t.Errorf("within the cache: %d more GetInstanceProfile, %d CreateInstanceProfile", e.emu.Calls("GetInstanceProfile")-calls, e.emu.Calls("CreateInstanceProfile"))
	}

	// Someone swaps the role; past the cache the profile is repaired, not recreated.
	other := "SomeoneElsesRole"
	e.emu.AddRole(other)
	client := iamClient(t, e)
	ctx := context.Background()
	if _, err := client.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(want), RoleName: aws.String(role)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(want), RoleName: aws.String(other)}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(16 * time.Minute)
	if name, cond := resolveProfile(t, e, roleClass(role)); name != want || cond.Status != metav1.ConditionTrue {
		t.Fatalf("after the swap: %q %s", name, cond.Status)
	}
	if p := e.emu.InstanceProfiles(); len(p) != 1 || len(p[0].Roles) != 1 || p[0].Roles[0] != role || e.emu.Calls("CreateInstanceProfile") != 1 {
		t.Errorf("after repair IAM holds %+v, %d creates", p, e.emu.Calls("CreateInstanceProfile"))
	}
}

// TestIAMErrors: the SDK decodes the emulator's IAM errors into its typed exceptions, and a
// throttled IAM call is retried.
func TestIAMErrors(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	client := iamClient(t, e)
	ctx := context.Background()
	_, err := client.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("nope")})
	if !hasCode(err, "NoSuchEntity") {
		t.Errorf("GetRole of a missing role = %v, want NoSuchEntity", err)
	}
	if _, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p")}); err != nil {
		t.Fatal(err)
	}
	_, err = client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p")})
	if !hasCode(err, "EntityAlreadyExists") {
		t.Errorf("second CreateInstanceProfile = %v, want EntityAlreadyExists", err)
	}
	role := emulator.NodeRoleName(cluster)
	e.emu.AddRole("second")
	for i, r := range []string{role, "second"} {
		_, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String(r)})
		if (i == 0) != (err == nil) || (i == 1 && !hasCode(err, "LimitExceeded")) {
			t.Errorf("AddRoleToInstanceProfile #%d = %v", i+1, err)
		}
	}
	e.emu.Throttle("GetInstanceProfile", 2)
	out, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p")})
	if err != nil || aws.ToString(out.InstanceProfile.Roles[0].RoleName) != role || out.InstanceProfile.CreateDate == nil {
		t.Fatalf("GetInstanceProfile after throttling = %+v, %v", out, err)
	}
	if n := e.emu.Calls("GetInstanceProfile"); n != 3 {
		t.Errorf("%d GetInstanceProfile requests, want 3 (two throttled)", n)
	}
}

func iamClient(t *testing.T, e *env) *iam.Client {
	t.Helper()
	cfg, err := tailoraws.SDKConfig(context.Background(), tailoraws.Options{Endpoint: e.emu.URL(), RetryMaxAttempts: 3, RetryMaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return iam.NewFromConfig(cfg)
}

func hasCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}
