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
	// DriftCapacityReservation: see reservationDrift.
	DriftCapacityReservation cloud.DriftReason = "CapacityReservationDrift"
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
	nc, err := p.nodeClass(ctx, ref.Name)
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
	inSubnet := false
	for _, s := range res.NodeClass.Status.Subnets {
		inSubnet = inSubnet || s.ID == aws.ToString(inst.SubnetId)
	}
	if !inSubnet {
		return DriftSubnet, nil
	}
	if reservationDrift(claim, nc) {
		return DriftCapacityReservation, nil
	}
	return "", nil
}

// reservationDrift says whether the claim was launched into a capacity reservation that the node
// class's status no longer lists: cancelled, expired, or no longer selected. The status written
// by the class's controller is read rather than the launch cache, so drift follows what kubectl
// shows; its instance keeps running as plain on-demand capacity until it is replaced.
func reservationDrift(claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass) bool {
	id := claim.Labels[awsv1.LabelCapacityReservationID]
	if id == "" || claim.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved {
		return false
	}
	for _, cr := range nc.Status.CapacityReservations {
		if cr.ID == id {
			return false
		}
	}
	return true
}

// staticDrift compares the hash the claim was launched with to the node class's, when both were
// computed the same way.
func staticDrift(claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass) bool {
	hash, ok := claim.Annotations[awsv1.AnnotationEC2NodeClassHash]
	version := claim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	return ok && version == NodeClassHashVersion && hash != NodeClassHash(nc)
}
