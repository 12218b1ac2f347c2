package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
)

// The EC2NodeClass checks: the node role and its instance profile, and what each subnet,
// security group and AMI selector term selects in the account.

// nodeClasses lists the EC2NodeClasses; a failure to list is a result of its own.
func nodeClasses(ctx context.Context, env *Env, check string) ([]awsv1.EC2NodeClass, []Result) {
	list, err := env.Tailor.AWSV1().EC2NodeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, []Result{fail(check, "", "install Tailor's CRDs (manifests/crds) and check the kubeconfig", "listing EC2NodeClasses: %v", err)}
	}
	if len(list.Items) == 0 {
		return nil, []Result{warn(check, "", "create an EC2NodeClass (docs/concepts/ec2nodeclass.md)", "no EC2NodeClass in the cluster")}
	}
	return list.Items, nil
}

// noAWS is the result of an account check when no AWS configuration could be loaded.
func (e *Env) noAWS(check string) []Result {
	why := "no AWS configuration"
	if e.AWSError != nil {
		why = e.AWSError.Error()
	}
	return []Result{warn(check, "", "configure AWS credentials (the default chain: AWS_PROFILE, the environment, SSO) and the region (--region)", "not checked: %s", why)}
}

func classObject(nc *awsv1.EC2NodeClass) string { return "EC2NodeClass " + nc.Name }

func (e *Env) resolver() *resolve.Resolver {
	return resolve.New(*e.AWS, e.Settings.ClusterName, e.kubernetesVersion(), nil, nil)
}

// kubernetesVersion is the cluster's minor version (e.g. "1.36"), which picks alias AMIs.
func (e *Env) kubernetesVersion() string {
	if v, err := e.Kube.Discovery().ServerVersion(); err == nil {
		minor := strings.TrimRight(v.Minor, "+")
		if v.Major != "" && minor != "" {
			return v.Major + "." + minor
		}
	}
	return "1.36"
}

func iamCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// checkNodeRoles: spec.instanceProfile exists and holds a role; or spec.role exists, and the
// profile Tailor manages for it, once created, holds it.
func checkNodeRoles(ctx context.Context, env *Env) []Result {
	const check = "node-role"
	if env.AWS == nil {
		return env.noAWS(check)
	}
	classes, problems := nodeClasses(ctx, env, check)
	if classes == nil {
		return problems
	}
	client := iam.NewFromConfig(*env.AWS)
	var out []Result
	for i := range classes {
		nc := &classes[i]
		out = append(out, nodeRole(ctx, client, env.Settings.ClusterName, env.AWS.Region, nc))
	}
	return out
}

func nodeRole(ctx context.Context, client *iam.Client, cluster, region string, nc *awsv1.EC2NodeClass) Result {
	const check = "node-role"
	obj := classObject(nc)
	if nc.Spec.InstanceProfile != nil {
		name := *nc.Spec.InstanceProfile
		got, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
		if iamCode(err) == "NoSuchEntity" {
			return fail(check, obj, fmt.Sprintf("create it (aws iam create-instance-profile --instance-profile-name %s) and add the node role, or set spec.role instead", name),
				"spec.instanceProfile %s does not exist in IAM", name)
		}
		if err != nil {
			return fail(check, obj, "allow iam:GetInstanceProfile to the identity running tailor doctor", "reading instance profile %s: %v", name, err)
		}
		if len(got.InstanceProfile.Roles) == 0 {
			return fail(check, obj, fmt.Sprintf("aws iam add-role-to-instance-profile --instance-profile-name %s --role-name NODE_ROLE", name),
				"spec.instanceProfile %s holds no role: nodes would launch without credentials and never join", name)
		}
		return ok(check, obj, "spec.instanceProfile %s holds role %s", name, aws.ToString(got.InstanceProfile.Roles[0].RoleName))
	}
	if nc.Spec.Role == "" {
		return fail(check, obj, "set spec.role (Tailor manages the instance profile) or spec.instanceProfile", "neither spec.role nor spec.instanceProfile is set")
	}
	role := nc.Spec.Role[strings.LastIndex(nc.Spec.Role, "/")+1:]
	if _, err := client.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); iamCode(err) == "NoSuchEntity" {
		return fail(check, obj, "create the node role (Karpenter's getting-started guide: KarpenterNodeRole-CLUSTER) or correct spec.role",
			"spec.role %s does not exist in IAM", role)
	} else if err != nil {
		return fail(check, obj, "allow iam:GetRole to the identity running tailor doctor", "reading role %s: %v", role, err)
	}
	if cluster == "" {
		return warn(check, obj, "pass --cluster-name", "spec.role %s exists; its instance profile was not looked for: the cluster name is unknown", role)
	}
	profile := resolve.InstanceProfileName(cluster, region, role)
	got, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)})
	switch {
	case iamCode(err) == "NoSuchEntity":
		return warn(check, obj, "Tailor creates it when it resolves the class; if this stays, see the class's InstanceProfileReady condition (Tailor's role needs iam:CreateInstanceProfile)",
			"spec.role %s exists; its instance profile %s does not yet", role, profile)
	case err != nil:
		return fail(check, obj, "allow iam:GetInstanceProfile to the identity running tailor doctor", "reading instance profile %s: %v", profile, err)
	}
	for _, r := range got.InstanceProfile.Roles {
		if aws.ToString(r.RoleName) == role {
			return ok(check, obj, "spec.role %s is in instance profile %s", role, profile)
		}
	}
	return fail(check, obj, fmt.Sprintf("aws iam remove-role-from-instance-profile, then add %s to %s (or delete the profile and let Tailor recreate it)", role, profile),
		"instance profile %s does not hold spec.role %s", profile, role)
}

func tagsString(tags map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, k+"="+tags[k])
	}
	return strings.Join(parts, ",")
}

// termField names a selector term's field as the class spells it, e.g.
// spec.subnetSelectorTerms[0].tags.
func termField(list string, i int, tags map[string]string, id, name string) (field, value string) {
	field = fmt.Sprintf("spec.%s[%d]", list, i)
	switch {
	case id != "":
		return field + ".id", id
	case name != "":
		return field + ".name", name
	default:
		return field + ".tags", tagsString(tags)
	}
}

// checkSubnets reports, per subnet selector term, the subnets it selects; a term that selects
// none fails, naming the class and the field.
func checkSubnets(ctx context.Context, env *Env) []Result {
	return checkSelectorTerms(ctx, env, selectorCheck{check: "subnets", noun: "subnet",
		permission: "ec2:DescribeSubnets", fix: "tag the cluster's private subnets",
		terms: func(nc *awsv1.EC2NodeClass, r *resolve.Resolver) []selectorTerm {
			var out []selectorTerm
			for j, term := range nc.Spec.SubnetSelectorTerms {
				field, value := termField("subnetSelectorTerms", j, term.Tags, term.ID, "")
				out = append(out, selectorTerm{field: field, value: value, selects: func(ctx context.Context) ([]string, error) {
					found, err := r.SubnetsOf(ctx, term)
					var ids []string
					for _, s := range found {
						ids = append(ids, s.ID+" ("+s.Zone+")")
					}
					return ids, err
				}})
			}
			return out
		}})
}

// checkSecurityGroups is checkSubnets for security group selector terms.
func checkSecurityGroups(ctx context.Context, env *Env) []Result {
	return checkSelectorTerms(ctx, env, selectorCheck{check: "security-groups", noun: "security group",
		permission: "ec2:DescribeSecurityGroups", fix: "tag the node security group",
		terms: func(nc *awsv1.EC2NodeClass, r *resolve.Resolver) []selectorTerm {
			var out []selectorTerm
			for j, term := range nc.Spec.SecurityGroupSelectorTerms {
				field, value := termField("securityGroupSelectorTerms", j, term.Tags, term.ID, term.Name)
				out = append(out, selectorTerm{field: field, value: value, selects: func(ctx context.Context) ([]string, error) {
					found, err := r.SecurityGroupsOf(ctx, term)
					var ids []string
					for _, g := range found {
						ids = append(ids, g.ID+" ("+g.Name+")")
					}
					return ids, err
				}})
			}
			return out
		}})
}

// selectorCheck is a check of one kind of selector term of every EC2NodeClass.
type selectorCheck struct {
	check, noun string
	// permission is the call a failed lookup needs; fix, what to do when a term selects nothing.
	permission, fix string
	terms           func(nc *awsv1.EC2NodeClass, r *resolve.Resolver) []selectorTerm
}

// selectorTerm is one term: its field, its value, and what it selects, each as "id (detail)".
type selectorTerm struct {
	field, value string
	selects      func(ctx context.Context) ([]string, error)
}

// checkSelectorTerms reports, per term of every class, what it selects; a term that selects
// nothing fails, naming the class and the field.
func checkSelectorTerms(ctx context.Context, env *Env, sc selectorCheck) []Result {
	if env.AWS == nil {
		return env.noAWS(sc.check)
	}
	classes, problems := nodeClasses(ctx, env, sc.check)
	if classes == nil {
		return problems
	}
	r := env.resolver()
	var out []Result
	for i := range classes {
		nc := &classes[i]
		for _, t := range sc.terms(nc, r) {
			ids, err := t.selects(ctx)
			switch {
			case err != nil:
				out = append(out, fail(sc.check, classObject(nc), "allow "+sc.permission+" to the identity running tailor doctor", "%s: %v", t.field, err))
			case len(ids) == 0:
				out = append(out, fail(sc.check, classObject(nc), sc.fix+" "+t.value+" (or correct the term)",
					"%s %s match no %s", t.field, t.value, sc.noun))
			default:
				out = append(out, ok(sc.check, classObject(nc), "%s %s: %s", t.field, t.value, strings.Join(ids, ", ")))
			}
		}
	}
	return out
}

// checkAMIs reports the images each class's alias or AMI selector terms resolve to.
func checkAMIs(ctx context.Context, env *Env) []Result {
	const check = "amis"
	if env.AWS == nil {
		return env.noAWS(check)
	}
	classes, problems := nodeClasses(ctx, env, check)
	if classes == nil {
		return problems
	}
	r := env.resolver()
	var out []Result
	for i := range classes {
		nc := &classes[i]
		what := "spec.amiSelectorTerms"
		for _, t := range nc.Spec.AMISelectorTerms {
			if t.Alias != "" {
				what = "alias " + t.Alias
			}
		}
		amis, reason, err := r.AMIs(ctx, nc)
		switch {
		case err != nil:
			out = append(out, fail(check, classObject(nc), "allow ec2:DescribeImages and ssm:GetParameter to the identity running tailor doctor", "%s: %v", what, err))
		case reason != "":
			out = append(out, fail(check, classObject(nc), "correct spec.amiSelectorTerms, or check the images exist in "+env.AWS.Region, "%s", reason))
		default:
			var ids []string
			for _, a := range amis {
				ids = append(ids, a.ID+" ("+a.Name+")")
			}
			out = append(out, ok(check, classObject(nc), "%s (Kubernetes %s): %s", what, env.kubernetesVersion(), strings.Join(ids, ", ")))
		}
	}
	return out
}
