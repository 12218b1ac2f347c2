package aws

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// TestPublishedRegionalPrices: in the regions outside us-east-1 whose on-demand prices the
// snapshot publishes, every way Tailor gets a price gives the published figure, read here from
// snapshot.json itself: the built-in table, the emulator's Pricing API, and the emulator's spot
// price history (the spot rule applied to the region's own price, not us-east-1's). The types
// are priced differently in us-east-1, so a region priced by a rule would fail.
func TestPublishedRegionalPrices(t *testing.T) {
	raw, err := os.ReadFile("ec2facts/snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	var facts struct {
		OnDemandLinux map[string]map[string]float64 `json:"onDemandLinux"`
	}
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	types := []string{"m5.large", "c5.xlarge", "r5.2xlarge", "c6g.large", "m6i.4xlarge", "g4dn.xlarge", "c5.metal"}
	ctx := context.Background()
	for _, region := range []string{"us-gov-east-1", "us-gov-west-1"} {
		t.Run(region, func(t *testing.T) {
			published := facts.OnDemandLinux[region]
			if len(published) == 0 {
				t.Fatalf("snapshot.json has no prices for %s", region)
			}
			zones, err := fake.RegionZones(region)
			if err != nil {
				t.Fatal(err)
			}
			emu := emulator.Start(emulator.Options{Region: region})
			t.Cleanup(emu.Close)
			list, err := NewPriceList(ctx, Options{Endpoint: emu.URL(), Region: region, RetryMaxAttempts: 2})
			if err != nil {
				t.Fatal(err)
			}
			api, err := list.prices.fetchOnDemand(ctx, "Linux")
			if err != nil {
				t.Fatal(err)
			}
			spot, err := list.prices.fetchSpot(ctx, []string{"Linux/UNIX"})
			if err != nil {
				t.Fatal(err)
			}
			builtIn := fallbackOnDemandPrices(region)
			if len(api) != len(ec2facts.TypesIn(region)) || len(builtIn) != len(api) {
				t.Errorf("the Pricing API prices %d types, the built-in table %d; the snapshot offers %d in %s",
					len(api), len(builtIn), len(ec2facts.TypesIn(region)), region)
			}
			for _, name := range types {
				want, ok := published[name]
				if !ok {
					t.Errorf("%s: not in %s's published prices", name, region)
					continue
				}
				if use1 := facts.OnDemandLinux["us-east-1"][name]; use1 == want {
					t.Errorf("%s: priced %v in %s as in us-east-1; pick a type whose prices differ", name, want, region)
				}
				if api[name] != want || builtIn[name] != want {
					t.Errorf("%s %s on demand: Pricing API %v, built-in %v; published %v", region, name, api[name], builtIn[name], want)
				}
				for _, zone := range fake.ZoneNames(zones) {
					if got, rule := spot[name][zone], ec2facts.Spot(want, name, zone); got != rule || got <= 0 || got >= want {
						t.Errorf("%s %s spot: %v, want the spot rule over the region's price, %v (on demand %v)", zone, name, got, rule, want)
					}
				}
			}
		})
	}
}
