package v1

import "testing"

func TestIsRestrictedLabel(t *testing.T) {
	for _, tc := range []struct {
		key        string
		restricted bool
	}{
		// Well-known labels in restricted domains.
		{"karpenter.sh/nodepool", false},
		{"karpenter.sh/capacity-type", false},
		{"topology.kubernetes.io/zone", false},
		{"topology.kubernetes.io/region", false},
		{"node.kubernetes.io/instance-type", false},
		{"kubernetes.io/arch", false},
		{"kubernetes.io/os", false},
		{"node.kubernetes.io/windows-build", false},
		{"karpenter.k8s.aws/instance-category", false},
		{"karpenter.k8s.aws/instance-generation", false},
		{"karpenter.k8s.aws/instance-gpu-count", false},
		{"topology.k8s.aws/zone-id", false},
		// Deprecated aliases of well-known labels.
		{"beta.kubernetes.io/arch", false},
		{"failure-domain.beta.kubernetes.io/zone", false},
		// Exceptions inside restricted domains.
		{"node.kubernetes.io/role", false},
		{"node-restriction.kubernetes.io/team", false},
		{"kops.k8s.io/instancegroup", false},
		// Custom domains and unprefixed keys.
		{"example.com/team", false},
		{"team", false},
		// Restricted.
		{"kubernetes.io/hostname", true},
		{"kubernetes.io/custom", true},
		{"foo.kubernetes.io/bar", true},
		{"k8s.io/foo", true},
		{"sub.k8s.io/foo", true},
		{"karpenter.sh/registered", true},
		{"karpenter.sh/custom", true},
		{"karpenter.k8s.aws/ec2nodeclass", true},
		{"karpenter.k8s.aws/custom", true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			err := IsRestrictedLabel(tc.key)
			if (err != nil) != tc.restricted {
				t.Fatalf("IsRestrictedLabel(%q) = %v, want restricted=%v", tc.key, err, tc.restricted)
			}
		})
	}
}

func TestIsRestrictedNodeLabel(t *testing.T) {
	for key, want := range map[string]bool{
		"example.com/team":                    false,
		"node.kubernetes.io/role":             false,
		"karpenter.sh/nodepool":               true, // Tailor sets it itself
		"node.kubernetes.io/instance-type":    true, // the kubelet sets it
		"karpenter.k8s.aws/instance-category": true, // the cloud sets it
		"kubernetes.io/hostname":              true,
	} {
		if got := IsRestrictedNodeLabel(key); got != want {
			t.Errorf("IsRestrictedNodeLabel(%q) = %v, want %v", key, got, want)
		}
	}
}
