package aws

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

func providerID(zone, id string) string { return "aws:///" + zone + "/" + id }

// instanceID parses aws:///<zone>/<instance-id>.
func instanceID(pid string) (string, error) {
	rest, ok := strings.CutPrefix(pid, "aws:///")
	_, id, found := strings.Cut(rest, "/")
	if !ok || !found || !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("provider ID %q is not aws:///<zone>/<instance-id>", pid)
	}
	return id, nil
}

// liveStates are the states of an instance that still exists for Tailor's purposes.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// describe returns the instance, or a NotFoundError once it is gone or going.
func (p *Provider) describe(ctx context.Context, pid string) (ec2types.Instance, error) {
	id, err := instanceID(pid)
	if err != nil {
		return ec2types.Instance{}, err
	}
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if isNotFound(err) {
		return ec2types.Instance{}, &cloud.NotFoundError{ProviderID: pid}
	}
	if err != nil {
		return ec2types.Instance{}, fmt.Errorf("describing instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			if inst.State != nil && contains(liveStates, string(inst.State.Name)) {
				return inst, nil
			}
		}
	}
	return ec2types.Instance{}, &cloud.NotFoundError{ProviderID: pid}
}

// Get implements cloud.CloudProvider.
func (p *Provider) Get(ctx context.Context, pid string) (*karpv1.NodeClaim, error) {
	inst, err := p.describe(ctx, pid)
	if err != nil {
		return nil, err
	}
	return p.claimFor(ctx, inst), nil
}

// List implements cloud.CloudProvider: live instances carrying this cluster's ownership tag and
// a NodePool tag, i.e. launched by Tailor for this cluster and no one else's.
func (p *Provider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	var out []*karpv1.NodeClaim
	pg := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(500), Filters: []ec2types.Filter{
		{Name: aws.String("tag:kubernetes.io/cluster/" + p.opts.ClusterName), Values: []string{"owned"}},
		{Name: aws.String("tag-key"), Values: []string{awsv1.TagKeyNodePool}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the cluster's instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				out = append(out, p.claimFor(ctx, inst))
			}
		}
	}
	return out, nil
}

// Delete implements cloud.CloudProvider. A claim whose status never got its provider ID (a crash
// between launch and status write) is found by its tag, so its instance does not leak.
func (p *Provider) Delete(ctx context.Context, claim *karpv1.NodeClaim) error {
	pid := claim.Status.ProviderID
	if pid == "" {
		found, err := p.findByClaim(ctx, claim.Name)
		if err != nil {
			return err
		}
		if found == "" {
			return &cloud.NotFoundError{ProviderID: "nodeclaim/" + claim.Name}
		}
		pid = found
	}
	inst, err := p.describe(ctx, pid)
	if err != nil {
		return err
	}
	out, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(inst.InstanceId)}})
	if isNotFound(err) {
		return &cloud.NotFoundError{ProviderID: pid}
	}
	if err != nil {
		return fmt.Errorf("terminating %s for nodeclaim %q: %w", pid, claim.Name, err)
	}
	// The first termination gives the instance's reservation slot back, so a replacement can
	// use it before the reservation is described again.
	if id := aws.ToString(inst.CapacityReservationId); id != "" {
		for _, c := range out.TerminatingInstances {
			if c.PreviousState != nil && contains(liveStates, string(c.PreviousState.Name)) {
				p.reservations.released(id)
			}
		}
	}
	return nil
}

func (p *Provider) findByClaim(ctx context.Context, name string) (string, error) {
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:kubernetes.io/cluster/" + p.opts.ClusterName), Values: []string{"owned"}},
		{Name: aws.String("tag:" + awsv1.TagKeyNodeClaim), Values: []string{name}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}})
	if err != nil {
		return "", fmt.Errorf("finding the instance of nodeclaim %q: %w", name, err)
	}
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			return providerID(aws.ToString(inst.Placement.AvailabilityZone), aws.ToString(inst.InstanceId)), nil
		}
	}
	return "", nil
}

// claimFor rebuilds a claim from what EC2 knows, as garbage collection needs it: the name and
// pool from tags, labels from the type, and the launch time as creation time.
func (p *Provider) claimFor(ctx context.Context, inst ec2types.Instance) *karpv1.NodeClaim {
	tags := map[string]string{}
	for _, t := range inst.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	labels := map[string]string{}
	if infos, _, err := p.catalog.get(ctx); err == nil {
		for _, info := range infos {
			if info.InstanceType == inst.InstanceType {
				labels = typeLabels(info)
			}
		}
	}
	labels[corev1.LabelInstanceTypeStable] = string(inst.InstanceType)
	labels[corev1.LabelTopologyZone] = zone
	labels[corev1.LabelTopologyRegion] = p.region()
	labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeOnDemand
	if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeSpot
	}
	if id := aws.ToString(inst.CapacityReservationId); id != "" {
		labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeReserved
		labels[awsv1.LabelCapacityReservationID] = id
	}
	if pool := tags[awsv1.TagKeyNodePool]; pool != "" {
		labels[karpv1.NodePoolLabelKey] = pool
	}
	if nc := tags[awsv1.TagKeyNodeClass]; nc != "" {
		labels[awsv1.LabelNodeClass] = nc
	}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: tags[awsv1.TagKeyNodeClaim], Labels: labels,
		CreationTimestamp: metav1.NewTime(aws.ToTime(inst.LaunchTime))}}
	claim.Status.ProviderID = providerID(zone, aws.ToString(inst.InstanceId))
	claim.Status.ImageID = aws.ToString(inst.ImageId)
	return claim
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
