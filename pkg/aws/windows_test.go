package aws_test

import (
	"context"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/userdata"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// TestWindowsFamiliesBoot launches with each Windows alias: the image comes from the Windows SSM
// parameter, the user data is PowerShell that calls the EKS bootstrap, and the node registers as
// Windows of the family's build, with what the claim promised (labels, taints, allocatable, the
// pod IPs the VPC resource controller advertises, a 50 GiB root volume).
func TestWindowsFamiliesBoot(t *testing.T) {
	for _, tc := range []struct{ alias, year, build string }{
		{"windows2019@latest", "2019", awsv1.Windows2019Build},
		{"windows2022@latest", "2022", awsv1.Windows2022Build},
		{"windows2025@latest", "2025", awsv1.Windows2025Build},
	} {
		t.Run(tc.alias, func(t *testing.T) {
			e := newEnv(t, emulator.Options{})
			nc := defaultClass()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tc.alias}}
			nc.Spec.UserData = ptr("Write-Host 'before the bootstrap'")
			e.setClass(nc)
			got, err := e.provider.Create(context.Background(), claim("a", karpv1.CapacityTypeOnDemand, "m5.xlarge"))
			if err != nil {
				t.Fatal(err)
			}
			l := <-e.launches
			checkNode(t, got, l)
			node := emulator.NodeFor(l)
			for _, labels := range []map[string]string{got.Labels, node.Labels} {
				if labels[corev1.LabelOSStable] != "windows" || labels[corev1.LabelWindowsBuild] != tc.build {
					t.Errorf("labels %v: want kubernetes.io/os=windows, node.kubernetes.io/windows-build=%s", labels, tc.build)
				}
			}
			want, ok := e.emu.Parameter("/aws/service/ami-windows-latest/Windows_Server-" + tc.year + "-English-Core-EKS_Optimized-" + emulator.DefaultKubernetesVersion + "/image_id")
			if !ok || got.Status.ImageID != want {
				t.Errorf("image %s, want %s from the Windows SSM parameter", got.Status.ImageID, want)
			}
			ips := node.Status.Allocatable[awsv1.ResourcePrivateIPv4Address]
			if promised := got.Status.Allocatable[awsv1.ResourcePrivateIPv4Address]; ips.Value() != 14 || promised.Cmp(ips) != 0 {
				t.Errorf("%s: claim promised %s, node has %s; want 14 (15 IPv4 per ENI less the primary)", awsv1.ResourcePrivateIPv4Address, promised.String(), ips.String())
			}
			if eph := node.Status.Capacity[corev1.ResourceEphemeralStorage]; eph.Value() != 50<<30 {
				t.Errorf("ephemeral-storage capacity %s, want the 50Gi Windows root volume", eph.String())
			}
			var data string
			for _, lt := range e.emu.LaunchTemplates() {
				if lt.ImageID == want {
					data = lt.UserData
				}
			}
			for _, part := range []string{"<powershell>\nWrite-Host 'before the bootstrap'\n[string]$EKSBootstrapScriptFile",
				`"$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"`, "-EKSClusterName 'tailor'", "--max-pods=110", "</powershell>"} {
				if !strings.Contains(data, part) {
					t.Errorf("launch template user data lacks %q:\n%s", part, data)
				}
			}
			if boot, err := userdata.Parse(data); err != nil || boot.MaxPods != 110 || boot.KubeReserved["memory"] != "1465Mi" {
				t.Errorf("the node reads max pods %d, kube-reserved %v (%v); want 110 and 11×110+255 = 1465Mi", boot.MaxPods, boot.KubeReserved, err)
			}
		})
	}
}

// TestWindowsPrices: a Windows class's offerings carry the Windows prices the Pricing API and the
// spot price history publish for the operating system, above the Linux ones.
func TestWindowsPrices(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	od := cloud.OfferingKey{InstanceType: "m5.large", Zone: fake.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand}
	spot := cloud.OfferingKey{InstanceType: "m5.large", Zone: fake.ZoneA, CapacityType: karpv1.CapacityTypeSpot}
	linuxOD, linuxSpot := offering(t, e.provider, od), offering(t, e.provider, spot)
	nc := defaultClass()
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
	e.setClass(nc)
	winOD, winSpot := offering(t, e.provider, od), offering(t, e.provider, spot)
	// The emulator's SIMULATED licence: 0.046 per vCPU-hour on top of the Linux price.
	if math.Abs(winOD.PricePerHour-(linuxOD.PricePerHour+2*0.046)) > 1e-6 || !winOD.Available {
		t.Errorf("Windows on-demand %+v, Linux %+v: want the Linux price plus 2 vCPUs × 0.046", winOD, linuxOD)
	}
	if math.Abs(winSpot.PricePerHour-(linuxSpot.PricePerHour+2*0.046)) > 1e-6 || !winSpot.Available || winSpot.PricePerHour >= winOD.PricePerHour {
		t.Errorf("Windows spot %+v, Linux spot %+v, Windows on-demand %v", winSpot, linuxSpot, winOD.PricePerHour)
	}
	// arm64 types have no Windows image: a Windows class offers none.
	types, err := e.provider.InstanceTypes(context.Background(), pool())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Labels[corev1.LabelArchStable] != karpv1.ArchitectureAmd64 || it.Labels[corev1.LabelOSStable] != "windows" {
			t.Errorf("a Windows class offers %s with labels %v", it.Name, it.Labels)
		}
	}
}
