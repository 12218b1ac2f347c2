package aws_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

type statement struct {
	Sid       string                    `json:"Sid"`
	Effect    string                    `json:"Effect"`
	Action    any                       `json:"Action"`
	Resource  any                       `json:"Resource"`
	Condition map[string]map[string]any `json:"Condition"`
}

func readPolicy(t *testing.T) []statement {
	t.Helper()
	raw, err := os.ReadFile("../../manifests/aws/iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version   string      `json:"Version"`
		Statement []statement `json:"Statement"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("iam-policy.json is not valid JSON: %v", err)
	}
	return doc.Statement
}

func actions(s statement) []string {
	switch a := s.Action.(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, v := range a {
			out = append(out, v.(string))
		}
		return out
	}
	return nil
}

// iamAction names the permission an emulated call needs.
func iamAction(action string) string {
	switch action {
	case "GetParameter":
		return "ssm:GetParameter"
	case "GetProducts":
		return "pricing:GetProducts"
	case "ReceiveMessage", "DeleteMessage", "GetQueueUrl", "SendMessage":
		return "sqs:" + action
	case "DeleteMessageBatch":
		return "sqs:DeleteMessage" // SQS authorizes a batch by its single action's permission

	case "GetRole", "GetInstanceProfile", "CreateInstanceProfile", "AddRoleToInstanceProfile", "RemoveRoleFromInstanceProfile", "TagInstanceProfile":
		return "iam:" + action
	}
	return "ec2:" + action
}

// TestPolicyAllowsEverythingTailorCalls runs a provider through its whole life against the
// emulator and checks that the shipped policy allows every call it made, and the interruption
// consumer's, and nothing is granted on all resources that can be scoped.
func TestPolicyAllowsEverythingTailorCalls(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 1, Tags: mlTerm.Tags})
	e.reserveClass(t, mlTerm)
	if _, err := e.provider.Create(ctx, reservedClaim("r", "m5.large")); err != nil {
		t.Fatal(err)
	}
	c, err := e.provider.Create(ctx, claim("a", karpv1.CapacityTypeSpot, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.provider.IsDrifted(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := e.provider.List(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.provider.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := e.provider.CollectLaunchTemplates(ctx, 0); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, s := range readPolicy(t) {
		if s.Effect != "Allow" {
			t.Errorf("statement %s: only Allow statements are expected", s.Sid)
		}
		for _, a := range actions(s) {
			allowed[a] = true
		}
	}
	needed := append(e.emu.CalledActions(), "ReceiveMessage", "DeleteMessageBatch", "GetQueueUrl")
	for _, action := range needed {
		if !allowed[iamAction(action)] {
			t.Errorf("Tailor calls %s but iam-policy.json does not allow it", iamAction(action))
		}
	}
}

func TestPolicyScopesDestructiveActions(t *testing.T) {
	for _, s := range readPolicy(t) {
		for _, a := range actions(s) {
			if !strings.HasPrefix(a, "ec2:") || strings.HasPrefix(a, "ec2:Describe") {
				continue
			}
			if r, ok := s.Resource.(string); ok && r == "*" {
				t.Errorf("%s (%s) is granted on every resource", a, s.Sid)
			}
			if a == "ec2:TerminateInstances" || a == "ec2:DeleteLaunchTemplate" {
				if _, ok := s.Condition["StringEquals"]["aws:ResourceTag/kubernetes.io/cluster/${CLUSTER_NAME}"]; !ok {
					t.Errorf("%s (%s) is not limited to resources tagged with the cluster", a, s.Sid)
				}
			}
			if a == "ec2:CreateTags" {
				if _, ok := s.Condition["StringEquals"]["ec2:CreateAction"]; !ok {
					t.Errorf("ec2:CreateTags (%s) is allowed outside resource creation", s.Sid)
				}
			}
		}
	}
}
