package emulator

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
)

// priceFor is the type's on-demand price for an operating system as the Pricing API names it
// ("Linux" or "Windows"), or false for systems the emulator does not price.
func priceFor(it *instanceTypeInfo, os string, linux float64) (float64, bool) {
	switch os {
	case "Linux":
		return linux, true
	case "Windows":
		// The snapshot has no Windows prices; its documented rule adds the licence per vCPU.
		return ec2facts.Windows(linux, int32(it.VCPUInfo.DefaultVCPUs)), true
	}
	return 0, false
}

// Windows Server releases whose EKS-optimized images the emulator publishes, at the SSM paths
// Karpenter reads for the windows2019/2022/2025@latest aliases.
var windowsReleases = []string{"2019", "2022", "2025"}

// seedWindows adds the EKS-optimized Windows Server Core images (x86-64 only, as AWS builds
// them) and their "latest" SSM parameters.
func seedWindows(w *world, k8s string, now time.Time) {
	created := now.Add(-48 * time.Hour)
	for _, year := range windowsReleases {
		name := fmt.Sprintf("Windows_Server-%s-English-Core-EKS_Optimized-%s-%s", year, k8s, created.Format("2006.01.02"))
		id := fmt.Sprintf("ami-%017x", len(w.images)+1)
		w.images = append(w.images, &Image{ID: id, Name: name, Architecture: "x86_64", OwnerID: AccountID,
			OwnerAlias: "amazon", Created: created, Tags: map[string]string{}})
		w.parameters[fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s)] = id
	}
}

// The Windows images' root volume, which holds the kubelet's directory.
const (
	windowsRootDevice = "/dev/sda1"
	windowsRootGiB    = 50
)

// windowsBuildOf is the Windows Server build of an EKS-optimized Windows image, from its name,
// or "" for other images.
func windowsBuildOf(imageName string) string {
	for year, build := range map[string]string{"2019": awsv1.Windows2019Build, "2022": awsv1.Windows2022Build, "2025": awsv1.Windows2025Build} {
		if strings.HasPrefix(imageName, "Windows_Server-"+year+"-") {
			return build
		}
	}
	return ""
}

// imageOSLocked is what the image boots: "windows" with its build, or "linux". Callers hold e.mu.
func (e *Emulator) imageOSLocked(imageID string) (os, build string) {
	for _, img := range e.world.images {
		if img.ID == imageID {
			if b := windowsBuildOf(img.Name); b != "" {
				return "windows", b
			}
		}
	}
	return "linux", ""
}

// addWindowsIPs adds what the VPC resource controller advertises on a Windows node: the primary
// ENI's secondary IPv4 addresses, one per pod.
func addWindowsIPs(capacity corev1.ResourceList, it *instanceTypeInfo) {
	if ips := it.NetworkInfo.Ipv4AddressesPerInterface - 1; ips > 0 {
		capacity[awsv1.ResourcePrivateIPv4Address] = *resource.NewQuantity(ips, resource.DecimalSI)
	}
}
