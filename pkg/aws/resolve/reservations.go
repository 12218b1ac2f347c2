package resolve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/awserr"
)

// Capacity reservation facts that Tailor shares with Karpenter.
const (
	// ReservationTypeDefault and ReservationTypeCapacityBlock are the values of
	// karpenter.k8s.aws/capacity-reservation-type and of status.capacityReservations[].reservationType.
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
	// CapacityBlockReclaim is how long before a Capacity Block's end EC2 starts terminating its
	// instances.
	CapacityBlockReclaim = 30 * time.Minute
	// CapacityBlockLead is how long before its end a Capacity Block's nodes are interrupted and
	// its offerings withdrawn: ten minutes before EC2 reclaims them, as Karpenter does, so pods
	// are moved by Tailor rather than killed by EC2.
	CapacityBlockLead = CapacityBlockReclaim + 10*time.Minute
)

// capacityReservations describes what the selector terms select (ORed), active ones only, as the
// node class status reports them. A term naming an ID EC2 does not know selects nothing.
func (r *Resolver) capacityReservations(ctx context.Context, terms []awsv1.CapacityReservationSelectorTerm) ([]awsv1.CapacityReservation, error) {
	observe := func(string, int) {}
	if r.describingReservations != nil {
		observe = r.describingReservations()
	}
	seen := map[string]ec2types.CapacityReservation{}
	for _, term := range terms {
		in := &ec2.DescribeCapacityReservationsInput{Filters: append(tagFilters(term.Tags),
			ec2types.Filter{Name: aws.String("state"), Values: []string{"active"}})}
		if term.OwnerID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{term.OwnerID}})
		}
		if term.InstanceMatchCriteria != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{term.InstanceMatchCriteria}})
		}
		if term.ID != "" {
			in.CapacityReservationIds = []string{term.ID}
		}
		for p := ec2.NewDescribeCapacityReservationsPaginator(r.ec2, in); p.HasMorePages(); {
			out, err := p.NextPage(ctx)
			if term.ID != "" && awserr.Code(err) == "InvalidCapacityReservationId.NotFound" {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("describing capacity reservations: %w", err)
			}
			for _, cr := range out.CapacityReservations {
				seen[aws.ToString(cr.CapacityReservationId)] = cr
			}
		}
	}
	now := r.clock.Now()
	out := make([]awsv1.CapacityReservation, 0, len(seen))
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		cr := seen[id]
		observe(id, int(aws.ToInt32(cr.AvailableInstanceCount)))
		status := awsv1.CapacityReservation{ID: id, InstanceType: aws.ToString(cr.InstanceType), AvailabilityZone: aws.ToString(cr.AvailabilityZone),
			OwnerID: aws.ToString(cr.OwnerId), InstanceMatchCriteria: string(cr.InstanceMatchCriteria), ReservationType: ReservationTypeDefault,
			State: "active"}
		if cr.ReservationType == ec2types.CapacityReservationTypeCapacityBlock {
			status.ReservationType = ReservationTypeCapacityBlock
		}
		if cr.EndDate != nil {
			end := metav1.NewTime(cr.EndDate.UTC())
			status.EndTime = &end
			// A block about to be reclaimed takes no new nodes; its nodes are being moved off.
			if status.ReservationType == ReservationTypeCapacityBlock && !now.Before(cr.EndDate.Add(-CapacityBlockLead)) {
				status.State = "expiring"
			}
		}
		out = append(out, status)
	}
	return out, nil
}
