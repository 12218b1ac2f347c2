package aws_test

import (
	"context"
	"testing"
	"time"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

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

// TestInstanceTypesAreKeptUntilAnOfferingChanges: a round asks for every NodePool's types, so
// they are built once and handed out again, the same objects, until something they show changes:
// an offering marked unavailable, and again when the mark lapses.
func TestInstanceTypesAreKeptUntilAnOfferingChanges(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	read := func() []*cloud.InstanceType { t.Helper(); return typesOf(t, e) }
	offering := func(its []*cloud.InstanceType, key cloud.OfferingKey) cloud.Offering {
		t.Helper()
		o, ok := cloud.FindOffering(its, key)
		if !ok {
			t.Fatalf("no offering %+v", key)
		}
		return o
	}
	first := read()
	if again := read(); len(again) != len(first) || again[0] != first[0] {
		t.Fatalf("a second read built the types anew")
	}
	o := first[0].Offerings[0]
	key := cloud.OfferingKey{InstanceType: first[0].Name, Zone: o.Zone, CapacityType: o.CapacityType}
	if !o.Available {
		t.Fatalf("offering %+v starts unavailable", key)
	}
	e.provider.MarkOfferingUnavailable(key)
	marked := read()
	if offering(marked, key).Available {
		t.Errorf("offering %+v still available after it was marked", key)
	}
	e.clock.Step(tailoraws.DefaultUnavailableOfferingsTTL + time.Second)
	if !offering(read(), key).Available {
		t.Errorf("offering %+v still unavailable after its mark lapsed", key)
	}
}

// TestInstanceTypesOutliveRefreshesThatFindNothingNew: the node class is resolved again every
// minute, and the catalog and prices read again every 12 hours. A round after a refresh that
// found what was known gets the same types, so the planner keeps what it worked out for the
// NodePool; a round after one that found a new image gets new types.
func TestInstanceTypesOutliveRefreshesThatFindNothingNew(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	read := func() []*cloud.InstanceType { t.Helper(); return typesOf(t, e) }
	first := read()

	subnets := e.emu.Calls("DescribeSubnets")
	e.clock.Step(2 * time.Minute)
	if read()[0] != first[0] {
		t.Error("the types were built anew after the node class was resolved again to the same subnets and images")
	}
	if e.emu.Calls("DescribeSubnets") == subnets {
		t.Fatal("the node class was not resolved again after two minutes")
	}

	described, spot := e.emu.Calls("DescribeInstanceTypes"), e.emu.Calls("DescribeSpotPriceHistory")
	e.clock.Step(tailoraws.CatalogRefreshInterval)
	if read()[0] != first[0] {
		t.Error("the types were built anew after the catalog and prices were read again unchanged")
	}
	if e.emu.Calls("DescribeInstanceTypes") == described || e.emu.Calls("DescribeSpotPriceHistory") == spot {
		t.Fatal("the catalog or the spot prices were not read again after 12 hours")
	}

	e.emu.AddImage(emulator.Image{ID: "ami-newer", Name: "amazon-eks-node-al2023-x86_64-standard-1.36-vnext", Architecture: "x86_64",
		OwnerID: emulator.AccountID, OwnerAlias: "amazon", Created: e.clock.Now()})
	e.emu.SetParameter("/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-newer")
	e.clock.Step(2 * time.Minute)
	if read()[0] == first[0] {
		t.Error("the types were kept after the node class resolved to a new image")
	}
}

// typesOf reads the default pool's instance types.
func typesOf(t *testing.T, e *env) []*cloud.InstanceType {
	t.Helper()
	its, err := e.provider.InstanceTypes(context.Background(), pool())
	if err != nil || len(its) == 0 {
		t.Fatalf("InstanceTypes: %d types, %v", len(its), err)
	}
	return its
}
