package userdata

import (
	"reflect"
	gostrings "strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

func testNode() Node {
	return Node{
		ClusterName:       "tailor",
		APIServerEndpoint: "https://api.example.internal",
		CABundle:          "Q0E=",
		ClusterDNS:        []string{"10.100.0.10"},
		Labels:            map[string]string{"karpenter.sh/nodepool": "default", "team": "a"},
		Taints:            []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}, {Key: "dedicated", Effect: corev1.TaintEffectNoExecute}},
		MaxPods:           29,
		KubeReserved:      map[string]string{"cpu": "70m", "memory": "574Mi"},
		SystemReserved:    map[string]string{"memory": "100Mi"},
		EvictionHard:      map[string]string{"memory.available": "100Mi"},
	}
}

// TestRoundTrip checks that what a booting node reads is what the provider wrote, for every
// family, with and without the node class's own user data.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, family, custom string
		wantInData           []string
	}{
		{name: "al2023", family: awsv1.AMIFamilyAL2023, wantInData: []string{"application/node.eks.aws", "--register-with-taints="}},
		{name: "al2023 with script", family: awsv1.AMIFamilyAL2023, custom: "#!/bin/bash\necho hi",
			wantInData: []string{"text/x-shellscript", "echo hi"}},
		{name: "al2023 with MIME", family: awsv1.AMIFamilyAL2023,
			custom:     "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript\n\necho custom\n--BOUNDARY--\n",
			wantInData: []string{"echo custom"}},
		{name: "bottlerocket", family: awsv1.AMIFamilyBottlerocket, wantInData: []string{"[settings.kubernetes]", `"karpenter.sh/unregistered" = [":NoExecute"]`}},
		{name: "bottlerocket merges custom", family: awsv1.AMIFamilyBottlerocket,
			custom:     "[settings.kubernetes]\ncluster-name = 'wrong' # ours wins\n[settings.host-containers.admin]\nenabled = true\n",
			wantInData: []string{"[settings.host-containers.admin]", "enabled = true"}},
		{name: "al2", family: awsv1.AMIFamilyAL2, custom: "#!/bin/bash\necho first",
			wantInData: []string{"/etc/eks/bootstrap.sh 'tailor'", "--use-max-pods false", "echo first"}},
		{name: "windows2022", family: awsv1.AMIFamilyWindows2022, wantInData: []string{"<powershell>\n",
			`[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"`,
			"& $EKSBootstrapScriptFile -EKSClusterName 'tailor' -APIServerEndpoint 'https://api.example.internal' -Base64ClusterCA 'Q0E='",
			`-KubeletExtraArgs '--node-labels="karpenter.sh/nodepool=default,team=a" --register-with-taints=`, "--max-pods=29",
			"-DNSClusterIP '10.100.0.10'", "\n</powershell>"}},
		{name: "windows2025 runs custom PowerShell first", family: awsv1.AMIFamilyWindows2025, custom: "Write-Host 'prepare the host'",
			wantInData: []string{"<powershell>\nWrite-Host 'prepare the host'\n[string]$EKSBootstrapScriptFile"}},
		{name: "windows2019 unwraps a <powershell> block", family: awsv1.AMIFamilyWindows2019,
			custom:     "<powershell>\r\nSet-Item -Path env:A -Value b\r\n</powershell>",
			wantInData: []string{"<powershell>\nSet-Item -Path env:A -Value b\n[string]$EKSBootstrapScriptFile"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testNode()
			data, err := Render(tc.family, in, tc.custom)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			for _, want := range tc.wantInData {
				if !gostrings.Contains(data, want) {
					t.Errorf("user data lacks %q:\n%s", want, data)
				}
			}
			got, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, data)
			}
			want := in
			want.Taints = in.taintsWithUnregistered()
			if tc.family == awsv1.AMIFamilyBottlerocket {
				// Bottlerocket groups taints by key, so they come back in key order.
				want.Taints = []corev1.Taint{want.Taints[1], want.Taints[0], want.Taints[2]}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse(Render(n)) =\n%+v\nwant\n%+v\ndata:\n%s", got, want, data)
			}
		})
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	for _, family := range []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyAL2, awsv1.AMIFamilyWindows2022} {
		a, _ := Render(family, testNode(), "")
		b, _ := Render(family, testNode(), "")
		if a != b {
			t.Errorf("%s: two renders of the same node differ, so launch template names would churn", family)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"unknown family has no format", func() error { _, err := Render("Ubuntu", testNode(), ""); return err }},
		{"powershell without the bootstrap call", func() error { _, err := Parse("<powershell>\nWrite-Host hi\n</powershell>"); return err }},
		{"powershell with an unknown bootstrap parameter", func() error {
			_, err := Parse("<powershell>\n& $EKSBootstrapScriptFile -EKSClusterName 'a' -Bogus 'b'\n</powershell>")
			return err
		}},
		{"bad bottlerocket custom", func() error { _, err := Render(awsv1.AMIFamilyBottlerocket, testNode(), "not toml"); return err }},
		{"unknown format", func() error { _, err := Parse("#!/bin/bash\necho"); return err }},
		{"MIME without bootstrap", func() error {
			_, err := Parse("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/x-shellscript\n\necho\n--B--\n")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestCustomPassesThrough(t *testing.T) {
	got, err := Render(awsv1.AMIFamilyCustom, testNode(), "anything")
	if err != nil || got != "anything" {
		t.Fatalf("Render(Custom) = %q, %v", got, err)
	}
}

// A hand-written bootstrap.sh call, as Custom-family user data has it, may give its flags as
// --flag=value; the node registers with what the kubelet flags say either way.
func TestParseHandWrittenBootstrap(t *testing.T) {
	for _, call := range []string{
		`/etc/eks/bootstrap.sh prod-east --kubelet-extra-args='--node-labels=foo=bar --max-pods=20'`,
		`/etc/eks/bootstrap.sh prod-east --kubelet-extra-args '--node-labels=foo=bar --max-pods=20'`,
	} {
		doc := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/x-shellscript\n\n#!/bin/bash\n" + call + "\n\n--B--\n"
		n, err := Parse(doc)
		if err != nil || n.Labels["foo"] != "bar" || n.MaxPods != 20 || n.ClusterName != "prod-east" {
			t.Errorf("%s: labels %v, max pods %d, cluster %q, %v", call, n.Labels, n.MaxPods, n.ClusterName, err)
		}
	}
}
