// Package drift marks NodeClaims that no longer match what their NodePool or node class asks for,
// with the Drifted condition and a reason. It only marks: the disruption loop replaces drifted
// nodes within the NodePools' budgets.
package drift

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Reasons of the Drifted condition that Tailor itself finds, as in Karpenter v1; a cloud adds its
// own through IsDrifted (the AWS provider: NodeClassDrift, AMIDrift, SecurityGroupDrift,
// SubnetDrift).
const (
	// NodePoolDrifted: the template's labels, annotations, taints, startup taints or node class
	// reference changed since the claim was made (by hash).
	NodePoolDrifted = "NodePoolDrifted"
	// RequirementsDrifted: the node's labels no longer meet the NodePool's requirements.
	RequirementsDrifted = "RequirementsDrifted"
	// InstanceTypeNotFound: the cloud no longer offers the node's instance type to the pool.
	InstanceTypeNotFound = "InstanceTypeNotFound"
)

// Finding is a drift and what it is about.
type Finding struct {
	Reason  string
	Message string
}

// Static compares the template hash the claim was made with to the pool's. A claim without a
// hash, or with one of another version, is not judged by it: the hash controller re-stamps such
// claims, so that changing how hashes are computed does not replace every node.
func Static(claim *karpv1.NodeClaim, pool *karpv1.NodePool) *Finding {
	have, ok := claim.Annotations[karpv1.NodePoolHashAnnotationKey]
	if !ok || claim.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != karpv1.NodePoolHashVersion {
		return nil
	}
	if want := pool.Hash(); have != want {
		return &Finding{NodePoolDrifted, fmt.Sprintf("the template of NodePool %s changed (labels, annotations, taints, startup taints or node class; hash %s, the NodeClaim was made from %s)",
			pool.Name, want, have)}
	}
	return nil
}

// Requirements checks the claim's labels against the pool's requirements, as the labels of a
// node the pool would launch now must meet them. A well-known label the claim does not carry
// is not held against it (the cloud may not set every one); a custom label it lacks fails an In
// or Exists requirement, as it would for a new node.
func Requirements(claim *karpv1.NodeClaim, pool *karpv1.NodePool) *Finding {
	for _, r := range scheduling.NodeSelectorRequirements(pool.Spec.Template.Spec.Requirements) {
		if alias, ok := karpv1.NormalizedLabels[r.Key]; ok {
			r.Key = alias
		}
		if _, has := claim.Labels[r.Key]; !has && karpv1.WellKnownLabels.Has(r.Key) {
			continue
		}
		sel, err := scheduling.NewSelector([]corev1.NodeSelectorRequirement{r})
		if err != nil {
			// Admission refuses such requirements; one that got through says nothing about drift.
			continue
		}
		if !sel.Matches(claim.Labels) {
			value, has := claim.Labels[r.Key]
			if !has {
				value = "(unset)"
			}
			return &Finding{RequirementsDrifted, fmt.Sprintf("label %s=%s no longer meets NodePool %s's requirement %s %s %v",
				r.Key, value, pool.Name, r.Key, r.Operator, r.Values)}
		}
	}
	return nil
}

// InstanceType reports a claim whose instance type the cloud no longer lists for the pool.
// types are the cloud's instance types for the pool, all of them, available or not.
func InstanceType(claim *karpv1.NodeClaim, pool *karpv1.NodePool, types []*cloud.InstanceType) *Finding {
	name := claim.Labels[corev1.LabelInstanceTypeStable]
	if name == "" || len(types) == 0 {
		return nil
	}
	if slices.ContainsFunc(types, func(it *cloud.InstanceType) bool { return it.Name == name }) {
		return nil
	}
	return &Finding{InstanceTypeNotFound, fmt.Sprintf("instance type %s is no longer offered to NodePool %s", name, pool.Name)}
}
