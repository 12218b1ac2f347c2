package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// watchCapacityBlocks checks every CapacityReservationRefreshInterval, until ctx ends, for
// instances of the cluster in Capacity Blocks that end within resolve.CapacityBlockLead, and
// hands each to handle as a capacity reservation interruption whose deadline is when EC2 starts
// reclaiming the block: the node is tainted, its pods planned elsewhere at once and the node
// drained, as for any interruption, and not budgeted, as in Karpenter. A notice handled is not
// sent again.
func (p *Provider) watchCapacityBlocks(ctx context.Context, handle cloud.InterruptionHandler) {
	ticker := tickerClock(p.opts.Clock).NewTicker(p.opts.CapacityReservationRefreshInterval)
	defer ticker.Stop()
	told := map[string]bool{}
	for {
		if err := p.interruptEndingBlocks(ctx, handle, told); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Checking nodes in Capacity Blocks; retrying")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

func (p *Provider) interruptEndingBlocks(ctx context.Context, handle cloud.InterruptionHandler, told map[string]bool) error {
	inReservation := map[string][]ec2types.Instance{}
	running := map[string]bool{}
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:kubernetes.io/cluster/" + p.opts.ClusterName), Values: []string{"owned"}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing the cluster's instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				running[aws.ToString(inst.InstanceId)] = true
				if id := aws.ToString(inst.CapacityReservationId); id != "" && !told[aws.ToString(inst.InstanceId)] {
					inReservation[id] = append(inReservation[id], inst)
				}
			}
		}
	}
	// Instances that are gone need no memory of their notice.
	for id := range told {
		if !running[id] {
			delete(told, id)
		}
	}
	if len(inReservation) == 0 {
		return nil
	}
	out, err := p.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: sortedKeys(inReservation)})
	if err != nil {
		return fmt.Errorf("describing the capacity reservations of running instances: %w", err)
	}
	now := p.opts.Clock.Now()
	for _, cr := range out.CapacityReservations {
		if cr.ReservationType != ec2types.CapacityReservationTypeCapacityBlock || cr.EndDate == nil || now.Before(cr.EndDate.Add(-resolve.CapacityBlockLead)) {
			continue
		}
		for _, inst := range inReservation[aws.ToString(cr.CapacityReservationId)] {
			pid := providerID(aws.ToString(inst.Placement.AvailabilityZone), aws.ToString(inst.InstanceId))
			klog.FromContext(ctx).Info("Capacity Block ends soon; interrupting its node", "providerID", pid,
				"capacityReservation", aws.ToString(cr.CapacityReservationId), "end", cr.EndDate.UTC())
			n := cloud.Interruption{ProviderID: pid, Kind: cloud.InterruptionCapacityReservation, Deadline: cr.EndDate.Add(-resolve.CapacityBlockReclaim)}
			if err := handle(ctx, n); err != nil {
				return fmt.Errorf("handling the end of Capacity Block %s for %s: %w", aws.ToString(cr.CapacityReservationId), pid, err)
			}
			told[aws.ToString(inst.InstanceId)] = true
		}
	}
	return nil
}
