package emulator

import (
	"fmt"
	"strings"
	"time"
)

// Past releases of the EKS-optimized images, SIMULATED after the real cadence: the EKS AMIs are
// versioned by build date (v20240625), Bottlerocket by semver (v1.20.3). Karpenter's docs
// recommend pinning an alias to one of them in production (al2023@v20240625), so each has its
// versioned SSM parameter, at the path Karpenter reads for a pinned alias.
var (
	eksReleases          = []string{"20240625", "20240703", "20240807", "20240917", "20241024", "20241213", "20250116", "20250403", "20250715"}
	bottlerocketReleases = []string{"1.20.3", "1.21.1", "1.22.0", "1.26.2", "1.32.0", "1.40.0"}
)

// seedReleases adds the images and versioned SSM parameters of every past release, and the
// versioned parameters of the current ones (latest, Bottlerocket latestBottlerocket), whose
// images seedWorld made.
func seedReleases(w *world, k8s, latest, latestBottlerocket string, now time.Time) {
	eks := "/aws/service/eks/optimized-ami/" + k8s
	type variant struct{ name, arch, param string }
	eksVariants := func(v string) []variant {
		return []variant{
			{"amazon-eks-node-al2023-x86_64-standard-" + k8s + "-v" + v, "x86_64", fmt.Sprintf("%s/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-%s-v%s/image_id", eks, k8s, v)},
			{"amazon-eks-node-al2023-arm64-standard-" + k8s + "-v" + v, "arm64", fmt.Sprintf("%s/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-%s-v%s/image_id", eks, k8s, v)},
			{"amazon-eks-node-al2023-x86_64-nvidia-" + k8s + "-v" + v, "x86_64", fmt.Sprintf("%s/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-%s-v%s/image_id", eks, k8s, v)},
			{"amazon-eks-node-" + k8s + "-v" + v, "x86_64", fmt.Sprintf("%s/amazon-linux-2/amazon-eks-node-%s-v%s/image_id", eks, k8s, v)},
			{"amazon-eks-arm64-node-" + k8s + "-v" + v, "arm64", fmt.Sprintf("%s/amazon-linux-2-arm64/amazon-eks-arm64-node-%s-v%s/image_id", eks, k8s, v)},
			{"amazon-eks-gpu-node-" + k8s + "-v" + v, "x86_64", fmt.Sprintf("%s/amazon-linux-2-gpu/amazon-eks-gpu-node-%s-v%s/image_id", eks, k8s, v)},
		}
	}
	bottlerocketVariants := func(v string) []variant {
		br := "/aws/service/bottlerocket/aws-k8s-" + k8s
		return []variant{
			{"bottlerocket-aws-k8s-" + k8s + "-x86_64-v" + v, "x86_64", br + "/x86_64/" + v + "/image_id"},
			{"bottlerocket-aws-k8s-" + k8s + "-aarch64-v" + v, "arm64", br + "/arm64/" + v + "/image_id"},
			{"bottlerocket-aws-k8s-" + k8s + "-nvidia-x86_64-v" + v, "x86_64", br + "-nvidia/x86_64/" + v + "/image_id"},
		}
	}
	byName := map[string]string{}
	for _, img := range w.images {
		byName[img.Name] = img.ID
	}
	add := func(vs []variant, created time.Time) {
		for _, v := range vs {
			id, ok := byName[v.name]
			if !ok {
				id = fmt.Sprintf("ami-%017x", len(w.images)+1)
				w.images = append(w.images, &Image{ID: id, Name: v.name, Architecture: v.arch, OwnerID: AccountID,
					OwnerAlias: "amazon", Created: created, Tags: map[string]string{}})
				byName[v.name] = id
			}
			w.parameters[v.param] = id
		}
	}
	for _, v := range append(append([]string(nil), eksReleases...), latest) {
		created, err := time.Parse("20060102", v)
		if err != nil || !created.Before(now) {
			created = now.Add(-24 * time.Hour)
		}
		add(eksVariants(v), created)
	}
	for i, v := range append(append([]string(nil), bottlerocketReleases...), strings.TrimPrefix(latestBottlerocket, "v")) {
		// Bottlerocket releases about monthly; older ones are older.
		add(bottlerocketVariants(v), now.Add(-time.Duration(len(bottlerocketReleases)-i+1)*30*24*time.Hour))
	}
}
