package aws_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// TestCatalogAgreesWithFake reads the catalog through DescribeInstanceTypes (in pages of 7) and
// checks that the AWS provider and the fake cloud describe every type alike, so plans do not
// change when the sandbox swaps one cloud for the other.
func TestCatalogAgreesWithFake(t *testing.T) {
	e := newEnv(t, emulator.Options{MaxPageSize: 7})
	got, err := e.provider.InstanceTypes(context.Background(), pool())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*cloud.InstanceType{}
	for _, it := range got {
		byName[it.Name] = it
	}
	want := fake.Catalog()
	if len(got) != len(want) {
		t.Fatalf("%d instance types, the fake has %d", len(got), len(want))
	}
	for _, w := range want {
		g := byName[w.Name]
		if g == nil {
			t.Errorf("%s missing", w.Name)
			continue
		}
		if !maps.Equal(g.Labels, w.Labels) {
			for _, k := range sets.List(sets.KeySet(g.Labels).Union(sets.KeySet(w.Labels))) {
				if g.Labels[k] != w.Labels[k] {
					t.Errorf("%s: label %s = %q, fake says %q", w.Name, k, g.Labels[k], w.Labels[k])
				}
			}
		}
		// Every resource agrees, extended resources (GPUs, Neuron, EFA) included, and memory
		// with the Graviton kernels' 64 MiB off arm64 types on both sides: when the fake kept it,
		// `tailor plan` packed nodes the AWS cloud cannot (harness seed 2518).
		resources := sets.KeySet(g.Capacity).Union(sets.KeySet(w.Capacity))
		for _, r := range sets.List(resources) {
			if a, b := g.Allocatable()[r], w.Allocatable()[r]; a.Cmp(b) != 0 {
				t.Errorf("%s: allocatable %s = %s, fake says %s", w.Name, r, a.String(), b.String())
			}
		}
		if len(g.Offerings) != len(w.Offerings) {
			t.Errorf("%s: %d offerings, fake has %d", w.Name, len(g.Offerings), len(w.Offerings))
		}
		for _, wo := range w.Offerings {
			for _, o := range g.Offerings {
				if o.Zone != wo.Zone || o.CapacityType != wo.CapacityType {
					continue
				}
				// On-demand prices are regional on EC2, so the emulator publishes the fake's
				// zone-a price for every zone; spot prices are zonal in both.
				want := wo.PricePerHour
				if wo.CapacityType == "on-demand" {
					if za, ok := w.CheapestOffering(func(x cloud.Offering) bool { return x.Zone == fake.ZoneA && x.CapacityType == "on-demand" }); ok {
						want = za.PricePerHour
					}
				}
				if !o.Available || o.PricePerHour != want {
					t.Errorf("%s %s %s: price %v available %v, want %v", w.Name, o.Zone, o.CapacityType, o.PricePerHour, o.Available, want)
				}
			}
		}
	}
}

// TestCatalogRefresh re-reads the catalog only after 12 hours of the injected clock.
func TestCatalogRefresh(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	read := func() int {
		if _, err := e.provider.InstanceTypes(ctx, pool()); err != nil {
			t.Fatal(err)
		}
		return e.emu.Calls("DescribeInstanceTypes")
	}
	first := read()
	e.clock.Step(11 * time.Hour)
	if got := read(); got != first {
		t.Errorf("catalog re-read after 11h (%d calls, then %d)", first, got)
	}
	e.clock.Step(time.Hour)
	if got := read(); got <= first {
		t.Errorf("catalog not re-read after 12h")
	}
}
