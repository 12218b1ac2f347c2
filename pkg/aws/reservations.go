package aws

import (
	"errors"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// reservedPriceDivisor: Karpenter prices a reserved offering at its on-demand price divided by
// ten million. A reservation is paid for whether it is used or not, so using it costs nearly
// nothing; keeping the on-demand ratio still orders reserved offerings among themselves.
const reservedPriceDivisor = 10_000_000

// reservationsFor lists the class's reservations of a type, by ID.
func reservationsFor(status []awsv1.CapacityReservation, instanceType string) []awsv1.CapacityReservation {
	var out []awsv1.CapacityReservation
	for _, cr := range status {
		if cr.InstanceType == instanceType {
			out = append(out, cr)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// errReservationsFull says every reservation a reserved launch could use was taken by launches in
// flight, so none was attempted.
var errReservationsFull = errors.New("every capacity reservation the claim may use is taken by launches in flight")

// takeReservations keeps the reserved options whose reservation still has room, counting a
// launch in flight against each until done.
func (p *Provider) takeReservations(options []launchOption) ([]launchOption, []string) {
	var ids []string
	for _, o := range options {
		if id := o.offering.Labels[awsv1.LabelCapacityReservationID]; !contains(ids, id) {
			ids = append(ids, id)
		}
	}
	taken := p.reservations.take(ids)
	var kept []launchOption
	for _, o := range options {
		if contains(taken, o.offering.Labels[awsv1.LabelCapacityReservationID]) {
			kept = append(kept, o)
		}
	}
	return kept, taken
}

func templateName(lo *ec2types.LaunchTemplateAndOverridesResponse) string {
	if lo == nil || lo.LaunchTemplateSpecification == nil {
		return ""
	}
	return aws.ToString(lo.LaunchTemplateSpecification.LaunchTemplateName)
}
