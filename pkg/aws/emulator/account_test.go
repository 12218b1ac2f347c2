package emulator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
)

// TestInterruptionQueueSetUp: through the real SDK clients, an interruption queue set up as
// Karpenter's template does has its ARN and access policy, and four EventBridge rules that target
// it, listed page by page; a role's inline policy reads back as it was put.
func TestInterruptionQueueSetUp(t *testing.T) {
	e, cfg := start(t, emulator.Options{MaxPageSize: 3})
	ctx := context.Background()
	url := e.SetUpInterruptionQueue("q")
	attrs, err := sqs.NewFromConfig(cfg).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["QueueArn"] != e.QueueARN("q") || !strings.Contains(attrs.Attributes["Policy"], "events.amazonaws.com") {
		t.Errorf("attributes %v", attrs.Attributes)
	}
	events := eventbridge.NewFromConfig(cfg)
	var names []string
	for in := (&eventbridge.ListRulesInput{}); ; {
		out, err := events.ListRules(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Rules {
			names = append(names, aws.ToString(r.Name))
			targets, err := events.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: r.Name})
			if err != nil || len(targets.Targets) != 1 || aws.ToString(targets.Targets[0].Arn) != e.QueueARN("q") {
				t.Errorf("targets of %s: %+v, %v", aws.ToString(r.Name), targets, err)
			}
		}
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if len(names) != 4 {
		t.Errorf("rules %v, want 4", names)
	}
	if _, err := events.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String("nope")}); errorCode(err) != "ResourceNotFoundException" {
		t.Errorf("targets of a missing rule: %v", err)
	}

	e.PutRolePolicy("tailor-controller", "tailor", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"*"}]}`)
	client := iam.NewFromConfig(cfg)
	list, err := client.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String("tailor-controller")})
	if err != nil || len(list.PolicyNames) != 1 {
		t.Fatalf("ListRolePolicies: %+v, %v", list, err)
	}
	doc, err := client.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String("tailor-controller"), PolicyName: aws.String("tailor")})
	if err != nil || !strings.Contains(aws.ToString(doc.PolicyDocument), "ec2") {
		t.Fatalf("GetRolePolicy: %+v, %v", doc, err)
	}
	if _, err := client.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String("tailor-controller")}); err != nil {
		t.Fatal(err)
	}
}
