package userdata

import (
	"strings"
	"testing"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// Inputs in the shapes Karpenter's documentation shows for spec.userData, written for these tests.
const (
	al2023NodeConfig = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 42
`
	// The AL2023 example shape: boundary "//", a NodeConfig part and a shell part, and a last
	// delimiter without the closing "--".
	al2023MIMEUnclosed = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 42

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "custom step on AL2023"
--//
`
	al2Script = "#!/bin/bash\necho 'custom step on AL2'\n"
	al2MIME   = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo 'custom step on AL2'

--BOUNDARY--
`
	bottlerocketSettings = `[settings.kubernetes]
kube-api-qps = 30
cluster-name = "ignored: Tailor's wins"

[settings.kubernetes.eviction-hard]
"memory.available" = "12%"

[settings.kubernetes.node-labels]
"example.com/owner" = "platform"

[settings.kernel.sysctl]
"user.max_user_namespaces" = "16384"
`
	bottlerocketRicher = `# comments, a float, an inline table and an array over several lines
[settings.kubernetes]
cpu-manager-policy = "static"
image-gc-high-threshold-percent = 85.5
[settings.host-containers.admin]
enabled = true
[settings.bootstrap-containers.setup]
source = "example.com/setup:v1"
mode = "once"
essential = false
[settings.network]
hosts = [
  ["10.0.0.10", ["registry.internal"]],
  ["10.0.0.11", ["mirror.internal"]],
]
[settings.oci-defaults]
capabilities = { audit-write = true, kill = true }
`
)

// TestUserDataShapes renders every documented shape for its family and reads it back as the
// node's bootstrap would: the node joins with Tailor's settings, and the user's own survive.
func TestUserDataShapes(t *testing.T) {
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	for _, tc := range []struct {
		name, family, custom string
		// wantInData are strings the merged user data must keep from the custom part.
		wantInData []string
		// wantMaxPods is what the node registers with (a user NodeConfig may override Tailor's).
		wantMaxPods int32
	}{
		{name: "al2 plain shell script", family: awsv1.AMIFamilyAL2, custom: al2Script, wantInData: []string{"custom step on AL2"}, wantMaxPods: 29},
		{name: "al2 MIME multipart", family: awsv1.AMIFamilyAL2, custom: al2MIME, wantInData: []string{"custom step on AL2"}, wantMaxPods: 29},
		{name: "al2 MIME without closing delimiter", family: awsv1.AMIFamilyAL2, custom: strings.Replace(al2MIME, "--BOUNDARY--", "--BOUNDARY", 1),
			wantInData: []string{"custom step on AL2"}, wantMaxPods: 29},
		{name: "al2023 NodeConfig alone", family: awsv1.AMIFamilyAL2023, custom: al2023NodeConfig, wantInData: []string{"maxPods: 42"}, wantMaxPods: 42},
		{name: "al2023 MIME NodeConfig and shell, no closing --", family: awsv1.AMIFamilyAL2023, custom: al2023MIMEUnclosed,
			wantInData: []string{"maxPods: 42", "custom step on AL2023"}, wantMaxPods: 42},
		{name: "al2023 MIME NodeConfig and shell, closing --", family: awsv1.AMIFamilyAL2023, custom: strings.TrimSuffix(al2023MIMEUnclosed, "\n") + "--\n",
			wantInData: []string{"maxPods: 42", "custom step on AL2023"}, wantMaxPods: 42},
		{name: "al2023 MIME with CRLF line endings", family: awsv1.AMIFamilyAL2023, custom: crlf(al2023MIMEUnclosed),
			wantInData: []string{"maxPods: 42", "custom step on AL2023"}, wantMaxPods: 42},
		{name: "al2023 MIME ending without any last delimiter", family: awsv1.AMIFamilyAL2023, custom: strings.TrimSuffix(al2023MIMEUnclosed, "--//\n"),
			wantInData: []string{"maxPods: 42", "custom step on AL2023"}, wantMaxPods: 42},
		{name: "al2023 MIME with unquoted boundary", family: awsv1.AMIFamilyAL2023, custom: strings.Replace(al2023MIMEUnclosed, `boundary="//"`, "boundary=//", 1),
			wantInData: []string{"maxPods: 42", "custom step on AL2023"}, wantMaxPods: 42},
		{name: "al2023 NodeConfig with CRLF", family: awsv1.AMIFamilyAL2023, custom: crlf(al2023NodeConfig), wantInData: []string{"maxPods: 42"}, wantMaxPods: 42},
		{name: "al2023 plain shell script", family: awsv1.AMIFamilyAL2023, custom: "#!/bin/bash\necho hi\n", wantInData: []string{"text/x-shellscript", "echo hi"}, wantMaxPods: 29},
		{name: "bottlerocket settings merged", family: awsv1.AMIFamilyBottlerocket, custom: bottlerocketSettings,
			wantInData: []string{"kube-api-qps = 30", `"user.max_user_namespaces" = "16384"`, `"example.com/owner" = "platform"`}, wantMaxPods: 29},
		{name: "bottlerocket with CRLF", family: awsv1.AMIFamilyBottlerocket, custom: crlf(bottlerocketSettings),
			wantInData: []string{"kube-api-qps = 30"}, wantMaxPods: 29},
		{name: "bottlerocket arrays, floats and inline tables", family: awsv1.AMIFamilyBottlerocket, custom: bottlerocketRicher,
			wantInData: []string{"image-gc-high-threshold-percent = 85.5", `hosts = [["10.0.0.10", ["registry.internal"]], ["10.0.0.11", ["mirror.internal"]]]`,
				"[settings.oci-defaults.capabilities]", "audit-write = true", `source = "example.com/setup:v1"`}, wantMaxPods: 29},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Validate(tc.family, tc.custom); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			in := testNode()
			data, err := Render(tc.family, in, tc.custom)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			for _, want := range tc.wantInData {
				if !strings.Contains(data, want) {
					t.Errorf("user data lacks %q:\n%s", want, data)
				}
			}
			got, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, data)
			}
			if got.ClusterName != in.ClusterName || got.APIServerEndpoint != in.APIServerEndpoint || got.CABundle != in.CABundle {
				t.Errorf("the node would join %q at %q (CA %q), want %q at %q", got.ClusterName, got.APIServerEndpoint, got.CABundle, in.ClusterName, in.APIServerEndpoint)
			}
			if got.Labels["team"] != "a" || !hasUnregistered(got) {
				t.Errorf("the node registers without Tailor's label or unregistered taint: %v %v", got.Labels, got.Taints)
			}
			if got.MaxPods != tc.wantMaxPods {
				t.Errorf("max pods %d, want %d", got.MaxPods, tc.wantMaxPods)
			}
		})
	}
}

func hasUnregistered(n Node) bool {
	for _, t := range n.Taints {
		if t.Key == UnregisteredTaint.Key && t.Effect == UnregisteredTaint.Effect {
			return true
		}
	}
	return false
}

// TestCustomUnchanged: a Custom image bootstraps itself, so its user data goes out byte for byte,
// whatever its shape.
func TestCustomUnchanged(t *testing.T) {
	for _, custom := range []string{al2023MIMEUnclosed, bottlerocketSettings, "not toml, not yaml: {", ""} {
		if err := Validate(awsv1.AMIFamilyCustom, custom); err != nil {
			t.Errorf("Validate(Custom, %q) = %v", custom, err)
		}
		if got, err := Render(awsv1.AMIFamilyCustom, testNode(), custom); err != nil || got != custom {
			t.Errorf("Render(Custom, %q) = %q, %v", custom, got, err)
		}
	}
}

// TestInvalidUserData: what no bootstrap could read is refused, naming spec.userData.
func TestInvalidUserData(t *testing.T) {
	for _, tc := range []struct{ name, family, custom, want string }{
		{"bottlerocket not TOML", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes\nmax-pods = 1", "not valid Bottlerocket TOML"},
		{"bottlerocket bad value", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nmax-pods = twelve", "unsupported value"},
		{"al2023 NodeConfig not YAML", awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: [unclosed", "not a YAML NodeConfig"},
		{"al2023 MIME NodeConfig part not YAML", awsv1.AMIFamilyAL2023,
			strings.Replace(al2023MIMEUnclosed, "      maxPods: 42", "      maxPods: [42", 1), "part 1"},
		{"windows: two powershell blocks", awsv1.AMIFamilyWindows2022, "<powershell>\na\n</powershell>\n<powershell>\nb\n</powershell>", "more than one <powershell> block"},
		{"windows: unclosed powershell block", awsv1.AMIFamilyWindows2022, "<powershell>\nWrite-Host a", "without its closing"},
		{"MIME that is not multipart", awsv1.AMIFamilyAL2, "MIME-Version: 1.0\nContent-Type: text/plain\n\necho", "must be multipart"},
		{"MIME with no part", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\nno delimiter here\n", "no part"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.family, tc.custom)
			if err == nil || !strings.Contains(err.Error(), "spec.userData") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error naming spec.userData and %q", err, tc.want)
			}
		})
	}
}
