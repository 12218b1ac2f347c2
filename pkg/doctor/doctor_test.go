package doctor

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tailor-sh/tailor/manifests/crds"
)

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"ec2:*", "ec2:createfleet", true},
		{"ec2:describe*", "ec2:describesubnets", true},
		{"ec2:describe*", "ec2:createfleet", false},
		{"*", "iam:passrole", true},
		{"sqs:?eceivemessage", "sqs:receivemessage", true},
		{"sqs:receivemessage", "sqs:receivemessages", false},
		{"iam:*instanceprofile", "iam:addroletoinstanceprofile", true},
	} {
		if got := wildcardMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q) = %v", tc.pattern, tc.s, got)
		}
	}
}

func TestAllows(t *testing.T) {
	doc := func(raw string) policyDocument {
		var d policyDocument
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	single := doc(`{"Statement":{"Effect":"Allow","Action":"ec2:Describe*","Resource":"*"}}`)
	denied := doc(`{"Statement":[{"Effect":"Deny","Action":["ec2:DescribeImages"],"Resource":"*"}]}`)
	conditional := doc(`{"Statement":[{"Effect":"Deny","Action":"ec2:DescribeSubnets","Resource":"*","Condition":{"StringEquals":{"aws:RequestedRegion":"eu-west-1"}}}]}`)
	for _, tc := range []struct {
		name   string
		docs   []policyDocument
		action string
		want   bool
	}{
		{"a single statement's wildcard", []policyDocument{single}, "ec2:DescribeSubnets", true},
		{"not allowed", []policyDocument{single}, "ec2:CreateFleet", false},
		{"an unconditional deny", []policyDocument{single, denied}, "ec2:DescribeImages", false},
		{"a conditional deny does not count", []policyDocument{single, conditional}, "ec2:DescribeSubnets", true},
	} {
		if got := allows(tc.docs, tc.action); got != tc.want {
			t.Errorf("%s: allows(%s) = %v", tc.name, tc.action, got)
		}
	}
}

func TestRequiredActionsComeFromThePolicyFile(t *testing.T) {
	actions, err := RequiredActions()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ec2:CreateFleet", "iam:PassRole", "sqs:ReceiveMessage", "ssm:GetParameter"} {
		if !strings.Contains(strings.Join(actions, " "), want) {
			t.Errorf("%s missing from %v", want, actions)
		}
	}
}

func TestQueuePolicy(t *testing.T) {
	const arn = "arn:aws:sqs:us-west-2:000000000000:q"
	for _, tc := range []struct {
		name, policy string
		status       Status
		message      string
	}{
		{"both services", `{"Statement":[{"Effect":"Allow","Principal":{"Service":["events.amazonaws.com","sqs.amazonaws.com"]},"Action":"sqs:SendMessage","Resource":"` + arn + `"}]}`, OK, "may send"},
		{"any principal", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"*"}]}`, OK, "may send"},
		{"EventBridge only", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"events.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + arn + `"}]}`, Fail, "does not let sqs.amazonaws.com send"},
		{"another queue", `{"Statement":[{"Effect":"Allow","Principal":{"Service":["events.amazonaws.com","sqs.amazonaws.com"]},"Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-west-2:000000000000:other"}]}`, Fail, "does not let events.amazonaws.com and sqs.amazonaws.com send"},
		{"none", "", Fail, "no access policy"},
	} {
		r := queuePolicy("queue q", arn, tc.policy)
		if r.Status != tc.status || !strings.Contains(r.Message, tc.message) {
			t.Errorf("%s: %s %q, want %s %q", tc.name, r.Status, r.Message, tc.status, tc.message)
		}
	}
}

func TestIsTailorAndIsKarpenter(t *testing.T) {
	d := func(image string, args ...string) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Image: image, Args: args}}}}}}
	}
	for _, tc := range []struct {
		d    *appsv1.Deployment
		want bool
	}{
		{d("example.invalid:5000/team/tailor-scheduler:v0.3.0"), true},
		{d("tailor-scheduler@sha256:abcd"), true},
		{d("my-build:1", "--cloud", "aws", "--cluster-name=prod"), true},
		{d("karpenter/controller:1.6.0", "--cluster-name=prod"), false},
	} {
		if got := isTailor(tc.d); got != tc.want {
			t.Errorf("isTailor(%s %v) = %v", tc.d.Spec.Template.Spec.Containers[0].Image, tc.d.Spec.Template.Spec.Containers[0].Args, got)
		}
	}
	for image, want := range map[string]bool{"karpenter/controller:1.6.0": true, "example.invalid/karpenter/controller@sha256:ab": true,
		"karpenter:0.37": true, "tailor-scheduler:v1": false, "karpenter-crd-upgrader:1": false} {
		if got := isKarpenterImage(image); got != want {
			t.Errorf("isKarpenterImage(%s) = %v", image, got)
		}
	}
}

func TestCRDDiff(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	want := all[0]
	if diff := crdDiff(want, want.DeepCopy()); diff != "" {
		t.Errorf("a CRD differs from itself: %s", diff)
	}
	stale := want.DeepCopy()
	spec := stale.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for name := range spec.Properties {
		delete(spec.Properties, name)
		if diff := crdDiff(want, stale); !strings.Contains(diff, "lacks spec."+name) {
			t.Errorf("without spec.%s: %q", name, diff)
		}
		break
	}
	newer := want.DeepCopy()
	newer.Spec.Versions = append(newer.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2"})
	if diff := crdDiff(want, newer); !strings.Contains(diff, "versions") {
		t.Errorf("an extra version: %q", diff)
	}
}

func TestWrite(t *testing.T) {
	var b strings.Builder
	if err := Write(&b, []Result{ok("crds", "CRD x", "fine"), fail("lease", "Lease a/b", "do this", "held by no one")}); err != nil {
		t.Fatal(err)
	}
	want := "OK    crds                 CRD x: fine\nFAIL  lease                Lease a/b: held by no one -> do this\n1 ok, 0 warnings, 1 failures\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
