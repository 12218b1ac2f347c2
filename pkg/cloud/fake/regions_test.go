package fake

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestRegionZones(t *testing.T) {
	for _, tc := range []struct {
		region string
		want   []Zone
	}{
		{"us-east-1", []Zone{{"us-east-1a", "use1-az1"}, {"us-east-1b", "use1-az2"}, {"us-east-1c", "use1-az3"}}},
		{"us-west-2", []Zone{{"us-west-2a", "usw2-az1"}, {"us-west-2b", "usw2-az2"}, {"us-west-2c", "usw2-az3"}}},
		{"us-west-1", []Zone{{"us-west-1b", "usw1-az1"}, {"us-west-1c", "usw1-az2"}}},
		{"ap-northeast-1", []Zone{{"ap-northeast-1a", "apne1-az1"}, {"ap-northeast-1c", "apne1-az2"}, {"ap-northeast-1d", "apne1-az3"}}},
		{"eu-central-2", []Zone{{"eu-central-2a", "euc2-az1"}, {"eu-central-2b", "euc2-az2"}, {"eu-central-2c", "euc2-az3"}}},
		{"us-gov-west-1", []Zone{{"us-gov-west-1a", "usgw1-az1"}, {"us-gov-west-1b", "usgw1-az2"}, {"us-gov-west-1c", "usgw1-az3"}}},
	} {
		got, err := RegionZones(tc.region)
		if err != nil {
			t.Errorf("%s: %v", tc.region, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: zones %v, want %v", tc.region, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: zones %v, want %v", tc.region, got, tc.want)
				break
			}
		}
	}
	for _, bad := range []string{"", "us-east", "useast1", "US-EAST-1", "mars-north-1", "us-middle-1", "us-east-1a", "us-east-01"} {
		if _, err := RegionZones(bad); err == nil || !strings.Contains(err.Error(), "not an AWS region name") {
			t.Errorf("region %q: error %v, want one saying it is not a region name", bad, err)
		}
	}
}

// The catalog of another region offers every type in that region's zones alone, at the prices
// the same place in us-west-2 has, so plans differ only by zone names.
func TestCatalogInOtherRegion(t *testing.T) {
	east, err := CatalogIn("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	west := Catalog()
	if len(east) != len(west) || len(east) == 0 {
		t.Fatalf("%d types in us-east-1, %d in us-west-2", len(east), len(west))
	}
	for i, it := range east {
		if len(it.Offerings) != 6 {
			t.Fatalf("%s has %d offerings, want 3 zones × 2 capacity types", it.Name, len(it.Offerings))
		}
		for j, o := range it.Offerings {
			if !strings.HasPrefix(o.Zone, "us-east-1") {
				t.Errorf("%s offered in %s", it.Name, o.Zone)
			}
			w := west[i].Offerings[j]
			if o.CapacityType == karpv1.CapacityTypeOnDemand && o.PricePerHour != w.PricePerHour {
				t.Errorf("%s on-demand in %s costs %v, in %s %v", it.Name, o.Zone, o.PricePerHour, w.Zone, w.PricePerHour)
			}
		}
	}
	if _, err := CatalogIn("nowhere"); err == nil {
		t.Error("a catalog for region nowhere")
	}
}

// A claim launched by a provider in another region lands in one of its zones, and its labels say
// so; a zone requirement naming that region's zone is met.
func TestProviderInAnotherRegion(t *testing.T) {
	p := New(Options{Region: "eu-west-1"})
	got, err := p.Create(context.Background(), newClaim("a", nil, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "eu-west-1b")))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[corev1.LabelTopologyRegion] != "eu-west-1" || got.Labels[corev1.LabelTopologyZone] != "eu-west-1b" {
		t.Errorf("claim labels: region %q, zone %q", got.Labels[corev1.LabelTopologyRegion], got.Labels[corev1.LabelTopologyZone])
	}
	if _, err := p.Create(context.Background(), newClaim("b", nil, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, ZoneA))); err == nil {
		t.Errorf("a claim for %s launched in eu-west-1", ZoneA)
	}
}
