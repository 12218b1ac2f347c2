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
	ctx := context.Background()
	read := func() []*cloud.InstanceType {
		t.Helper()
		its, err := e.provider.InstanceTypes(ctx, pool())
		if err != nil {
			t.Fatal(err)
		}
		return its
	}
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
