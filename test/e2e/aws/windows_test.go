package aws

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// windowsManifests are what a user with Linux and Windows workloads applies: an EC2NodeClass and
// a NodePool per operating system. The NodePools say nothing of the OS; their classes decide it.
const windowsManifests = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: windows}
spec:
  amiSelectorTerms: [{alias: windows2025@latest}]
  role: KarpenterNodeRole-tailor
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: tailor}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: tailor}}]
  userData: |
    <powershell>
    New-Item -Path 'C:\tailor' -ItemType Directory
    </powershell>
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: windows}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: windows}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: linux}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`

// TestWindowsAndLinuxNodes, on the AWS provider: pods that select kubernetes.io/os: windows run
// on Windows Server 2025 nodes from the windows2025@latest alias, launched from PowerShell user
// data that runs the class's own statements and then the EKS bootstrap; pods that select linux
// never land there. A Windows node's offering costs more than the same type on Linux.
func TestWindowsAndLinuxNodes(t *testing.T) {
	e := env.NewAWS(t)
	e.ApplyExample("ec2nodeclass.yaml")
	file := filepath.Join(t.TempDir(), "windows.yaml")
	if err := os.WriteFile(file, []byte(windowsManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{file}, nil); err != nil {
		t.Fatal(err)
	}
	for name, system := range map[string]string{"win": "windows", "lin": "linux"} {
		d := env.DeploymentOf(name, 2, "500m", "512Mi")
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelOSStable: system}
		if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]struct{ os, pool, build string }{
		"win": {"windows", "windows", awsv1.Windows2025Build}, "lin": {"linux", "linux", ""}} {
		for _, p := range e.WaitRunning("app="+name, 2, 2*time.Minute) {
			n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n.Labels[corev1.LabelOSStable] != want.os || n.Labels[karpv1.NodePoolLabelKey] != want.pool ||
				n.Labels[corev1.LabelWindowsBuild] != want.build || n.Status.NodeInfo.OperatingSystem != want.os {
				t.Errorf("pod %s runs on node %s, labels %v, OS %s; want %+v", p.Name, n.Name, n.Labels, n.Status.NodeInfo.OperatingSystem, want)
			}
			if want.os == "windows" {
				checkWindowsNode(e, t, n)
			}
		}
	}
}

// checkWindowsNode checks what the provider asked EC2 for a Windows node, and what it costs.
func checkWindowsNode(e *env.AWS, t *testing.T, n *corev1.Node) {
	t.Helper()
	claim := e.ClaimOfNode(n)
	var data string
	for _, lt := range e.Emu.LaunchTemplates() {
		if lt.ImageID == claim.Status.ImageID {
			data = lt.UserData
		}
	}
	for _, part := range []string{"<powershell>\nNew-Item -Path 'C:\\tailor' -ItemType Directory\n[string]$EKSBootstrapScriptFile",
		"& $EKSBootstrapScriptFile -EKSClusterName 'tailor'", "karpenter.sh/nodepool=windows", "--max-pods=110"} {
		if !strings.Contains(data, part) {
			t.Errorf("the Windows launch template's user data lacks %q:\n%s", part, data)
		}
	}
	price := func(pool string) float64 {
		np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, pool, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		types, err := e.Provider.InstanceTypes(e.Ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range types {
			for _, o := range it.Offerings {
				if it.Name == n.Labels[corev1.LabelInstanceTypeStable] && o.Zone == n.Labels[corev1.LabelTopologyZone] && o.CapacityType == karpv1.CapacityTypeOnDemand {
					return o.PricePerHour
				}
			}
		}
		t.Fatalf("NodePool %s offers no %s on-demand in %s", pool, n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone])
		return 0
	}
	if win, lin := price("windows"), price("linux"); win <= lin {
		t.Errorf("%s costs %v on Windows and %v on Linux; want Windows dearer", n.Labels[corev1.LabelInstanceTypeStable], win, lin)
	}
}
