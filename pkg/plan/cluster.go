package plan

import (
	"fmt"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// discoveryTag is the tag Karpenter's getting-started guide selects a cluster's subnets and
// security groups by; `tailor sandbox --cluster-name` tags its emulated ones with it.
const discoveryTag = "karpenter.sh/discovery"

// clusterWarnings says where an EC2NodeClass names another cluster than the one planned for: the
// plan ignores subnets and roles, but the same class applied to that cluster would not be Ready.
func clusterWarnings(nc *awsv1.EC2NodeClass, cluster string) []string {
	if cluster == "" {
		return nil
	}
	var out []string
	check := func(field string, tags map[string]string) {
		if v, ok := tags[discoveryTag]; ok && v != cluster && v != "*" {
			out = append(out, fmt.Sprintf("EC2NodeClass %s: %s selects %s=%s, but the cluster is %s", nc.Name, field, discoveryTag, v, cluster))
		}
	}
	for i, t := range nc.Spec.SubnetSelectorTerms {
		check(fmt.Sprintf("spec.subnetSelectorTerms[%d].tags", i), t.Tags)
	}
	for i, t := range nc.Spec.SecurityGroupSelectorTerms {
		check(fmt.Sprintf("spec.securityGroupSelectorTerms[%d].tags", i), t.Tags)
	}
	if want := "KarpenterNodeRole-" + cluster; nc.Spec.Role != "" && nc.Spec.Role != want {
		out = append(out, fmt.Sprintf("EC2NodeClass %s: spec.role is %s; the sandbox's node role for cluster %s is %s", nc.Name, nc.Spec.Role, cluster, want))
	}
	return out
}
