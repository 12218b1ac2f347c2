package planner

import (
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner/clusterview"
)

// Cluster is the state one plan starts from; View is what the planner sees of it
// (see clusterview).
type (
	Cluster = clusterview.Cluster
	View    = clusterview.View
)

// PoolUsage is what each NodePool's NodeClaims hold, counted against its limits (see
// clusterview.PoolUsage).
func PoolUsage(claims []*karpv1.NodeClaim, typesByPool map[string][]*cloud.InstanceType) map[string]corev1.ResourceList {
	return clusterview.PoolUsage(claims, typesByPool)
}
