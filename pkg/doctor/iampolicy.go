package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/tailor-sh/tailor/manifests"
)

// Tailor's own role against manifests/aws/iam-policy.json. The check compares actions: every
// action the policy allows must be allowed by some Allow statement of the role's inline or
// attached policies, and denied by no unconditional Deny. It does not call the IAM policy
// simulator: the policy's conditions (the cluster's tags, the requested region, the node role to
// pass) need resource ARNs and request context a read-only check does not have, and a simulated
// denial of one of them would say less than the missing action does.

// RequiredActions are the actions manifests/aws/iam-policy.json allows, sorted.
func RequiredActions() ([]string, error) {
	var doc policyDocument
	if err := json.Unmarshal(manifests.IAMPolicy, &doc); err != nil {
		return nil, fmt.Errorf("manifests/aws/iam-policy.json: %w", err)
	}
	var out []string
	for _, st := range doc.Statement {
		if st.Effect == "Allow" {
			out = append(out, stringList(st.Action)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func checkIAMPolicy(ctx context.Context, env *Env) []Result {
	const check = "iam-policy"
	role := env.Settings.Role
	if role == "" {
		return []Result{warn(check, "", "pass --role (with Pod Identity the role is not in the cluster), or annotate Tailor's ServiceAccount "+RoleARNAnnotation,
			"Tailor's IAM role is unknown: its policy was not checked")}
	}
	if env.AWS == nil {
		return env.noAWS(check)
	}
	name := role[strings.LastIndex(role, "/")+1:]
	obj := "role " + name
	required, err := RequiredActions()
	if err != nil {
		return []Result{fail(check, obj, "rebuild tailor", "%v", err)}
	}
	docs, err := rolePolicies(ctx, iam.NewFromConfig(*env.AWS), name)
	if iamCode(err) == "NoSuchEntity" {
		return []Result{fail(check, obj, "create Tailor's role with manifests/aws/iam-policy.json, or correct the ServiceAccount's "+RoleARNAnnotation, "the role does not exist")}
	}
	if err != nil {
		return []Result{fail(check, obj, "allow iam:ListRolePolicies, iam:GetRolePolicy, iam:ListAttachedRolePolicies, iam:GetPolicy and iam:GetPolicyVersion to the identity running tailor doctor",
			"reading the role's policies: %v", err)}
	}
	var missing []string
	for _, action := range required {
		if !allows(docs, action) {
			missing = append(missing, action)
		}
	}
	if len(missing) > 0 {
		return []Result{fail(check, obj, "attach manifests/aws/iam-policy.json (placeholders filled) to the role",
			"the role's policies do not allow %d action(s) of manifests/aws/iam-policy.json: %s", len(missing), strings.Join(missing, ", "))}
	}
	return []Result{ok(check, obj, "allows all %d actions of manifests/aws/iam-policy.json (actions compared; conditions and resources not simulated)", len(required))}
}

// allows: some Allow statement names the action, and no Deny without a condition does.
func allows(docs []policyDocument, action string) bool {
	allowed := false
	for _, doc := range docs {
		for _, st := range doc.Statement {
			if !matchesAny(stringList(st.Action), action) {
				continue
			}
			switch st.Effect {
			case "Allow":
				allowed = true
			case "Deny":
				if len(st.Condition) == 0 && matchesAny(stringList(st.Resource), "*") {
					return false
				}
			}
		}
	}
	return allowed
}

// rolePolicies reads the role's inline policies and the default versions of its attached ones.
func rolePolicies(ctx context.Context, client *iam.Client, role string) ([]policyDocument, error) {
	var raws []string
	inline := &iam.ListRolePoliciesInput{RoleName: aws.String(role)}
	for {
		page, err := client.ListRolePolicies(ctx, inline)
		if err != nil {
			return nil, err
		}
		for _, name := range page.PolicyNames {
			got, err := client.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String(name)})
			if err != nil {
				return nil, err
			}
			raws = append(raws, aws.ToString(got.PolicyDocument))
		}
		if !page.IsTruncated {
			break
		}
		inline.Marker = page.Marker
	}
	attached := &iam.ListAttachedRolePoliciesInput{RoleName: aws.String(role)}
	for {
		page, err := client.ListAttachedRolePolicies(ctx, attached)
		if err != nil {
			return nil, err
		}
		for _, p := range page.AttachedPolicies {
			policy, err := client.GetPolicy(ctx, &iam.GetPolicyInput{PolicyArn: p.PolicyArn})
			if err != nil {
				return nil, err
			}
			version, err := client.GetPolicyVersion(ctx, &iam.GetPolicyVersionInput{PolicyArn: p.PolicyArn, VersionId: policy.Policy.DefaultVersionId})
			if err != nil {
				return nil, err
			}
			raws = append(raws, aws.ToString(version.PolicyVersion.Document))
		}
		if !page.IsTruncated {
			break
		}
		attached.Marker = page.Marker
	}
	docs := make([]policyDocument, 0, len(raws))
	for _, raw := range raws {
		// IAM returns policy documents URL-encoded.
		if decoded, err := url.QueryUnescape(raw); err == nil {
			raw = decoded
		}
		var doc policyDocument
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			return nil, fmt.Errorf("a policy of role %s does not parse: %w", role, err)
		}
		docs = append(docs, doc)
	}
	return docs, nil
}
