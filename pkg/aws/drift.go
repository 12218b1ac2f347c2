package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Drift reasons, checked in this order; the first that applies is reported.
const (
	DriftNodeClass     cloud.DriftReason = "NodeClassDrift"
	DriftAMI           cloud.DriftReason = "AMIDrift"
	DriftSecurityGroup cloud.DriftReason = "SecurityGroupDrift"
	DriftSubnet        cloud.DriftReason = "SubnetDrift"
)

// IsDrifted implements cloud.CloudProvider: the node class's static hash changed, or the
// instance's AMI, security groups or subnet are no longer what the node class selects. A node
// class that is not ready says nothing about drift: selectors that momentarily match nothing
// must not replace the fleet.
func (p *Provider) IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (cloud.DriftReason, error) {
	ref := claim.Spec.NodeClassRef
	if ref == nil || ref.Name == "" {
		return "", nil
	}
	nc, err := p.opts.NodeClasses(ctx, ref.Name)
	if err != nil {
		return "", fmt.Errorf("reading EC2NodeClass %q: %w", ref.Name, err)
	}
	if staticDrift(claim, nc) {
		return DriftNodeClass, nil
	}
	res, err := p.resolve(ctx, nc)
	if err != nil {
		return "", err
	}
	if ok, _ := res.Ready(); !ok {
		return "", nil
	}
	inst, err := p.describe(ctx, claim.Status.ProviderID)
	if err != nil {
		return "", err
	}
	infos, _, err := p.catalog.get(ctx)
	if err != nil {
		return "", err
	}
	for _, info := range infos {
		if info.InstanceType == inst.InstanceType {
			if want := imageFor(res.NodeClass.Status.AMIs, typeLabels(info)); want != "" && want != aws.ToString(inst.ImageId) {
				return DriftAMI, nil
			}
		}
	}
	have, want := sets.New[string](), sets.New[string]()
	for _, g := range inst.SecurityGroups {
		have.Insert(aws.ToString(g.GroupId))
	}
	for _, g := range res.NodeClass.Status.SecurityGroups {
		want.Insert(g.ID)
	}
	if !have.Equal(want) {
		return DriftSecurityGroup, nil
	}
	for _, s := range res.NodeClass.Status.Subnets {
		if s.ID == aws.ToString(inst.SubnetId) {
			return "", nil
		}
	}
	return DriftSubnet, nil
}

// staticDrift compares the hash the claim was launched with to the node class's, when both were
// computed the same way.
func staticDrift(claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass) bool {
	hash, ok := claim.Annotations[awsv1.AnnotationEC2NodeClassHash]
	version := claim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	return ok && version == NodeClassHashVersion && hash != NodeClassHash(nc)
}
