package aws_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// reservedClass is the default class selecting reservations tagged team=ml, with its status
// resolved as the status controller would write it.
func (e *env) reserveClass(t *testing.T, terms ...awsv1.CapacityReservationSelectorTerm) *awsv1.EC2NodeClass {
	t.Helper()
	nc := defaultClass()
	nc.Spec.CapacityReservationSelectorTerms = terms
	e.setClass(nc)
	return e.writeStatus(t)
}

// writeStatus resolves the default class afresh and stores its status, as its controller does.
func (e *env) writeStatus(t *testing.T) *awsv1.EC2NodeClass {
	t.Helper()
	res, err := e.provider.Resolver().Resolve(context.Background(), e.class("default"))
	if err != nil {
		t.Fatal(err)
	}
	e.setClass(res.NodeClass)
	return res.NodeClass
}

func reservedClaim(name string, instanceTypes ...string) *karpv1.NodeClaim {
	c := claim(name, karpv1.CapacityTypeReserved, instanceTypes...)
	c.Spec.Requirements[0].Values = []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand}
	return c
}

var mlTerm = awsv1.CapacityReservationSelectorTerm{Tags: map[string]string{"team": "ml"}}

func TestCapacityReservationSelectorTerms(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	end := e.clock.Now().Add(3 * time.Hour)
	a := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 2, Tags: map[string]string{"team": "ml"}})
	b := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "c5.large", Zone: fake.ZoneB, Total: 1, OwnerID: "111111111111",
		Tags: map[string]string{"team": "ml"}})
	cancelled := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 1, Tags: map[string]string{"team": "ml"}})
	if err := e.emu.CancelCapacityReservation(cancelled); err != nil {
		t.Fatal(err)
	}
	block := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "p5.48xlarge", Zone: fake.ZoneC, Total: 1,
		Type: emulator.ReservationTypeCapacityBlock, MatchCriteria: emulator.MatchCriteriaTargeted, EndTime: end, Tags: map[string]string{"team": "gpu"}})
	for _, tc := range []struct {
		name  string
		terms []awsv1.CapacityReservationSelectorTerm
		want  []string
	}{
		{"by id", []awsv1.CapacityReservationSelectorTerm{{ID: a}}, []string{a}},
		{"by tags, active only", []awsv1.CapacityReservationSelectorTerm{mlTerm}, []string{a, b}},
		{"by tags and owner", []awsv1.CapacityReservationSelectorTerm{{Tags: mlTerm.Tags, OwnerID: "111111111111"}}, []string{b}},
		{"terms are ORed", []awsv1.CapacityReservationSelectorTerm{{ID: a}, {Tags: map[string]string{"team": "gpu"}, InstanceMatchCriteria: "targeted"}}, []string{a, block}},
		{"unknown id selects nothing", []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0000000000000dead"}}, nil},
		{"cancelled id selects nothing", []awsv1.CapacityReservationSelectorTerm{{ID: cancelled}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := e.reserveClass(t, tc.terms...)
			var got []string
			for _, cr := range nc.Status.CapacityReservations {
				got = append(got, cr.ID)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && !equalIDs(got, tc.want)) {
				t.Errorf("status.capacityReservations = %v, want %v", got, tc.want)
			}
			if c := nc.GetCondition(awsv1.ConditionTypeCapacityReservationsReady); c == nil || c.Status != "True" {
				t.Errorf("CapacityReservationsReady = %+v, want True", c)
			}
		})
	}
	nc := e.reserveClass(t, awsv1.CapacityReservationSelectorTerm{ID: block})
	got := nc.Status.CapacityReservations[0]
	want := awsv1.CapacityReservation{ID: block, InstanceType: "p5.48xlarge", AvailabilityZone: fake.ZoneC, OwnerID: emulator.AccountID,
		InstanceMatchCriteria: "targeted", ReservationType: resolve.ReservationTypeCapacityBlock, State: "active"}
	if got.EndTime == nil || !got.EndTime.Time.Equal(end) {
		t.Errorf("endTime = %v, want %v", got.EndTime, end)
	}
	got.EndTime = nil
	if got != want {
		t.Errorf("status = %+v, want %+v", got, want)
	}
	// Within CapacityBlockLead of its end the block is expiring: its nodes are being moved off.
	e.clock.Step(3*time.Hour - resolve.CapacityBlockLead)
	if s := e.reserveClass(t, awsv1.CapacityReservationSelectorTerm{ID: block}).Status.CapacityReservations[0].State; s != "expiring" {
		t.Errorf("state %q %s before the end, want expiring", s, resolve.CapacityBlockLead)
	}
}

func equalIDs(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// reservedOffering is the type's reserved offering in the zone.
func reservedOffering(t *testing.T, p *tailoraws.Provider, instanceType, zone string) (cloud.Offering, bool) {
	t.Helper()
	types, err := p.InstanceTypes(context.Background(), pool())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		for _, o := range it.Offerings {
			if it.Name == instanceType && o.Zone == zone && o.CapacityType == karpv1.CapacityTypeReserved {
				return o, true
			}
		}
	}
	return cloud.Offering{}, false
}

// TestReservedOfferings: a reservation is offered in its zone and type only, at the on-demand
// price over ten million, labelled with its ID and type, with the room it has.
func TestReservedOfferings(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	id := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 2, Tags: mlTerm.Tags})
	e.reserveClass(t, mlTerm)
	got, ok := reservedOffering(t, e.provider, "m5.large", fake.ZoneA)
	if !ok {
		t.Fatal("no reserved m5.large offering in the reservation's zone")
	}
	od := offering(t, e.provider, cloud.OfferingKey{InstanceType: "m5.large", Zone: fake.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand})
	if got.PricePerHour != od.PricePerHour/10_000_000 || !got.Available || got.PricePerHour <= 0 {
		t.Errorf("reserved offering %+v; want available at %v (on-demand %v / 1e7)", got, od.PricePerHour/10_000_000, od.PricePerHour)
	}
	if got.Labels[awsv1.LabelCapacityReservationID] != id || got.Labels[awsv1.LabelCapacityReservationType] != "default" {
		t.Errorf("labels %v", got.Labels)
	}
	// The planner gives the reservation to no more claims than it has room for.
	if got.ReservationID != id || got.ReservationCapacity != 2 {
		t.Errorf("reservation %q with room for %d, want %s with room for 2", got.ReservationID, got.ReservationCapacity, id)
	}
	for _, other := range []struct{ it, zone string }{{"m5.large", fake.ZoneB}, {"c5.large", fake.ZoneA}} {
		if o, ok := reservedOffering(t, e.provider, other.it, other.zone); ok {
			t.Errorf("reserved offering %+v for %s in %s, which no reservation holds", o, other.it, other.zone)
		}
	}
}

// TestReservedLaunchesUpToTheCount: claims that allow reserved capacity launch into the
// reservation, targeted through their launch template, until it is full; the next falls back to
// on-demand, and a terminated reserved instance gives its slot back.
func TestReservedLaunchesUpToTheCount(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	id := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 2, Tags: mlTerm.Tags,
		MatchCriteria: emulator.MatchCriteriaTargeted})
	e.reserveClass(t, mlTerm)
	var claims []*karpv1.NodeClaim
	for _, name := range []string{"a", "b", "c"} {
		got, err := e.provider.Create(ctx, reservedClaim(name, "m5.large", "c5.large"))
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, got)
	}
	for i, c := range claims {
		wantType, wantID := karpv1.CapacityTypeReserved, id
		if i == 2 {
			wantType, wantID = karpv1.CapacityTypeOnDemand, ""
		}
		if c.Labels[karpv1.CapacityTypeLabelKey] != wantType || c.Labels[awsv1.LabelCapacityReservationID] != wantID {
			t.Errorf("claim %s launched as %s in %q, want %s in %q", c.Name, c.Labels[karpv1.CapacityTypeLabelKey],
				c.Labels[awsv1.LabelCapacityReservationID], wantType, wantID)
		}
		lt := e.launchTemplateOf(t, c.Status.ProviderID)
		crs := lt.CapacityReservationSpecification
		switch {
		case wantID != "" && (crs == nil || crs.CapacityReservationTarget == nil || *crs.CapacityReservationTarget.CapacityReservationId != id):
			t.Errorf("claim %s's template targets %+v, want %s", c.Name, crs, id)
		case wantID == "" && (crs == nil || crs.CapacityReservationPreference != "none"):
			t.Errorf("claim %s's template does not opt out of open reservations: %+v", c.Name, crs)
		}
	}
	if r := e.emu.CapacityReservations()[0]; r.Available != 0 {
		t.Errorf("reservation has %d available after two launches into it, want 0", r.Available)
	}
	if o, _ := reservedOffering(t, e.provider, "m5.large", fake.ZoneA); o.Available {
		t.Error("the full reservation is still offered")
	}
	if err := e.provider.Delete(ctx, claims[0]); err != nil {
		t.Fatal(err)
	}
	if o, _ := reservedOffering(t, e.provider, "m5.large", fake.ZoneA); !o.Available {
		t.Error("the reservation is not offered again after one of its instances was terminated")
	}
}

// TestReservationCapacityExceededFallsBack: what Tailor last read of a reservation is stale (it
// was used up by someone else, or cancelled); EC2 refuses the launch with
// ReservationCapacityExceeded, the claim launches on-demand instead, and the reserved offering is
// unavailable for the TTL.
func TestReservationCapacityExceededFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(e *env, id string)
	}{
		{"used up elsewhere", func(e *env, _ string) {
			if _, err := e.newProvider(t, cluster).Create(context.Background(), reservedClaim("elsewhere", "m5.large")); err != nil {
				t.Fatal(err)
			}
		}},
		{"cancelled", func(e *env, id string) {
			if err := e.emu.CancelCapacityReservation(id); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, emulator.Options{})
			id := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 1, Tags: mlTerm.Tags})
			e.reserveClass(t, mlTerm)
			if o, _ := reservedOffering(t, e.provider, "m5.large", fake.ZoneA); !o.Available {
				t.Fatal("reservation not offered")
			}
			tc.spoil(e, id)
			got, err := e.provider.Create(context.Background(), reservedClaim("a", "m5.large"))
			if err != nil {
				t.Fatal(err)
			}
			if got.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand || got.Labels[corev1.LabelInstanceTypeStable] != "m5.large" {
				t.Errorf("launched %v, want an on-demand m5.large", got.Labels)
			}
			if o, _ := reservedOffering(t, e.provider, "m5.large", fake.ZoneA); o.Available {
				t.Error("the refused reservation is still offered")
			}
		})
	}
}

// TestCapacityReservationDrift: a node in a reservation drifts once its class's status no longer
// lists the reservation; nodes outside reservations do not.
func TestCapacityReservationDrift(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	id := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 1, Tags: mlTerm.Tags})
	e.reserveClass(t, mlTerm)
	reserved, err := e.provider.Create(ctx, reservedClaim("a", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	onDemand, err := e.provider.Create(ctx, claim("b", karpv1.CapacityTypeOnDemand, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if reserved.Labels[awsv1.LabelCapacityReservationID] != id {
		t.Fatalf("claim a launched outside the reservation: %v", reserved.Labels)
	}
	for _, step := range []struct {
		name       string
		change     func()
		want       cloud.DriftReason
		wantOthers cloud.DriftReason
	}{
		{"reservation active", func() {}, "", ""},
		{"reservation cancelled", func() {
			if err := e.emu.CancelCapacityReservation(id); err != nil {
				t.Fatal(err)
			}
			e.writeStatus(t)
		}, tailoraws.DriftCapacityReservation, ""},
	} {
		step.change()
		for c, want := range map[*karpv1.NodeClaim]cloud.DriftReason{reserved: step.want, onDemand: step.wantOthers} {
			if got, err := e.provider.IsDrifted(ctx, c); err != nil || got != want {
				t.Errorf("%s: IsDrifted(%s) = %q, %v; want %q", step.name, c.Name, got, err, want)
			}
		}
	}
}

// TestCapacityBlockEnds: a claim launches into a Capacity Block with the block's market type;
// CapacityBlockLead before the block ends its node is interrupted, with EC2's reclaim time as the
// deadline, once.
func TestCapacityBlockEnds(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	end := e.clock.Now().Add(2 * time.Hour)
	id := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneB, Total: 1, Tags: mlTerm.Tags,
		Type: emulator.ReservationTypeCapacityBlock, MatchCriteria: emulator.MatchCriteriaTargeted, EndTime: end})
	e.reserveClass(t, mlTerm)
	got, err := e.provider.Create(context.Background(), reservedClaim("a", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[awsv1.LabelCapacityReservationID] != id || got.Labels[awsv1.LabelCapacityReservationType] != resolve.ReservationTypeCapacityBlock {
		t.Fatalf("claim launched as %v, want into block %s", got.Labels, id)
	}
	if lt := e.launchTemplateOf(t, got.Status.ProviderID); lt.InstanceMarketOptions == nil || lt.InstanceMarketOptions.MarketType != "capacity-block" {
		t.Errorf("template market options %+v, want capacity-block", lt.InstanceMarketOptions)
	}

	notices := make(chan cloud.Interruption, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- e.provider.HandleInterruptions(ctx, func(_ context.Context, n cloud.Interruption) error { notices <- n; return nil })
	}()
	e.clock.Step(2*time.Hour - resolve.CapacityBlockLead - time.Minute)
	// A minute before the lead time, checks find nothing to do.
	for range 3 {
		e.clock.Step(time.Second)
		select {
		case n := <-notices:
			t.Fatalf("notice %+v a minute before the lead time", n)
		case <-time.After(50 * time.Millisecond):
		}
	}
	e.clock.Step(time.Minute)
	var n cloud.Interruption
	for n.ProviderID == "" {
		select {
		case n = <-notices:
		case <-time.After(100 * time.Millisecond):
			e.clock.Step(time.Minute)
		}
	}
	want := cloud.Interruption{ProviderID: got.Status.ProviderID, Kind: cloud.InterruptionCapacityReservation, Deadline: end.Add(-30 * time.Minute)}
	if !n.Deadline.Equal(want.Deadline) || n.ProviderID != want.ProviderID || n.Kind != want.Kind {
		t.Errorf("notice %+v, want %+v", n, want)
	}
	e.clock.Step(time.Minute)
	select {
	case again := <-notices:
		t.Errorf("notice sent twice: %+v", again)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A launch that is tried again for the same claim (its status write failed, the process
// restarted) gets back, through the client token, the instance the first try put in the
// reservation, although the reservation is now full with that very instance and the retry's own
// plan no longer names it: the claim is that instance, in its reservation, not a failure that
// terminates it.
func TestRepeatedReservedLaunchKeepsItsInstance(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	id := e.emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: fake.ZoneA, Total: 1, Tags: mlTerm.Tags,
		MatchCriteria: emulator.MatchCriteriaTargeted})
	e.reserveClass(t, mlTerm)
	first, err := e.provider.Create(ctx, reservedClaim("a", "m5.large", "c5.large"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.provider.Create(ctx, reservedClaim("a", "m5.large", "c5.large"))
	if err != nil {
		t.Fatalf("the repeated launch failed: %v", err)
	}
	if again.Status.ProviderID != first.Status.ProviderID || again.Labels[awsv1.LabelCapacityReservationID] != id {
		t.Errorf("repeated launch: %s in %q; want the first launch's %s in %s", again.Status.ProviderID,
			again.Labels[awsv1.LabelCapacityReservationID], first.Status.ProviderID, id)
	}
	if n := e.emu.Calls("CreateFleet"); n != 2 {
		t.Errorf("%d CreateFleet calls, want 2 (the second answered from its client token)", n)
	}
}

// Launches side by side that need the same new template wait for the one that creates it: none
// names a template EC2 does not have yet (each would fail its fleet and launch again).
func TestLaunchesSideBySideShareTheTemplateTheyNeed(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	e.emu.SetLatency(50 * time.Millisecond)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = e.provider.Create(ctx, claim(fmt.Sprintf("side-%d", i), karpv1.CapacityTypeOnDemand, "m5.large"))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := e.emu.Calls("CreateFleet"); n != len(errs) {
		t.Errorf("%d CreateFleet calls for %d launches: some named a template that did not exist yet", n, len(errs))
	}
}
