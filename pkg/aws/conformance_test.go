package aws_test

import (
	"context"
	"testing"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts/ec2factstest"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// TestConformance reads every modelled region's catalog from the emulator through
// DescribeInstanceTypes (in pages) and checks that each type's labels, capacity and allocatable,
// as the provider computes them for an AL2023 class without blockDeviceMappings, are what
// Karpenter publishes for the type and what its rules give from EC2's facts. A mismatch names
// the type, the field and both values; the counts by field are logged.
func TestConformance(t *testing.T) {
	published := ec2factstest.Karpenter()
	for _, region := range ec2facts.Regions() {
		t.Run(region, func(t *testing.T) {
			e := newEnv(t, emulator.Options{Region: region, MaxPageSize: 100})
			got, err := e.provider.InstanceTypes(context.Background(), pool())
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*cloud.InstanceType{}
			for _, it := range got {
				byName[it.Name] = it
			}
			var mismatches []ec2factstest.Mismatch
			var unpriced []string
			for _, want := range ec2facts.TypesIn(region) {
				it := byName[want.Name]
				if it == nil {
					mismatches = append(mismatches, ec2factstest.Mismatch{Type: want.Name, Field: "type", Got: "<missing>", Want: want.Name})
					continue
				}
				mismatches = append(mismatches, ec2factstest.Check(it.Name, it.Labels, it.Capacity, it.Allocatable(), published[it.Name])...)
				if len(it.Offerings) == 0 || !it.Offerings[0].Available {
					unpriced = append(unpriced, it.Name)
				}
			}
			if len(unpriced) > 0 {
				t.Errorf("%d types have no available offering, e.g. %v", len(unpriced), unpriced[:min(5, len(unpriced))])
			}
			report(t, region+" through the emulator", len(got), mismatches)
		})
	}
}

// report fails with the first mismatches of each field, and logs the counts by field.
func report(t *testing.T, what string, types int, mismatches []ec2factstest.Mismatch) {
	t.Helper()
	if len(mismatches) == 0 {
		return
	}
	t.Errorf("%s: %d mismatches over %d types, by field:\n%s", what, len(mismatches), types, ec2factstest.ByField(mismatches))
	shown := map[string]int{}
	for _, m := range mismatches {
		if shown[m.Field]++; shown[m.Field] <= 3 {
			t.Error(m)
		}
	}
}
