package ec2facts

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestSnapshotIsWhole: the checked-in snapshot.json is well-formed and consistent with itself:
// every type has what DescribeInstanceTypes must say of it, its ENI limits agree with its
// network cards, every type is priced somewhere, and every modelled region offers types at
// prices with spot below on-demand. hack/ec2facts writes the file; this test is what a refresh
// must pass.
func TestSnapshotIsWhole(t *testing.T) {
	// The file as written: one object, types sorted by name and unique, so a refresh's diff reads
	// type by type.
	var raw Snapshot
	if err := json.Unmarshal(snapshotJSON, &raw); err != nil {
		t.Fatalf("snapshot.json does not parse: %v", err)
	}
	names := make([]string, len(raw.Types))
	for i, it := range raw.Types {
		names[i] = it.Name
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("types are not sorted by name and unique")
	}

	s := Load()
	if s.Source.Repository == "" || len(s.Source.Commit) != 40 || len(s.Source.CommitDate) != len("2006-01-02") {
		t.Fatalf("snapshot has no source repository, commit or date: %+v", s.Source)
	}
	if len(s.Source.Files) == 0 {
		t.Errorf("snapshot names no source file")
	}
	if len(s.Types) < 1000 {
		t.Errorf("only %d types", len(s.Types))
	}
	usage := []string{"on-demand", "spot", "capacity-block"}
	for _, it := range s.Types {
		if it.VCPUs <= 0 || it.MemoryMiB <= 0 || it.CPUMaker == "" || len(it.Cards) == 0 {
			t.Errorf("%s: incomplete: %+v", it.Name, it)
		}
		if it.Arch != "x86_64" && it.Arch != "arm64" {
			t.Errorf("%s: architecture %q", it.Name, it.Arch)
		}
		if it.ENIs <= 0 || it.IPv4PerENI <= 0 {
			t.Errorf("%s: ENI limits %d ENIs x %d IPv4", it.Name, it.ENIs, it.IPv4PerENI)
		}
		var cardENIs int32
		found := false
		for _, c := range it.Cards {
			if c.ENIs <= 0 {
				t.Errorf("%s: network card %d takes %d ENIs", it.Name, c.Index, c.ENIs)
			}
			cardENIs += c.ENIs
			found = found || c.Index == it.DefaultCard
		}
		if !found {
			t.Errorf("%s: default network card %d is not among its cards", it.Name, it.DefaultCard)
		}
		if cardENIs != it.ENIs {
			t.Errorf("%s: its network cards take %d ENIs, the instance %d", it.Name, cardENIs, it.ENIs)
		}
		if it.Trunking != (it.BranchENIs > 0) {
			t.Errorf("%s: trunking %v with %d branch ENIs", it.Name, it.Trunking, it.BranchENIs)
		}
		if it.BareMetal != (it.Hypervisor == "") || (it.Hypervisor != "" && it.Hypervisor != "nitro" && it.Hypervisor != "xen") {
			t.Errorf("%s: bare metal %v, hypervisor %q", it.Name, it.BareMetal, it.Hypervisor)
		}
		if !slices.Contains(it.UsageClasses, "on-demand") {
			t.Errorf("%s: usage classes %v lack on-demand", it.Name, it.UsageClasses)
		}
		for _, u := range it.UsageClasses {
			if !slices.Contains(usage, u) {
				t.Errorf("%s: usage class %q", it.Name, u)
			}
		}
		if g := it.GPU; g != nil && (g.Name == "" || g.Maker == "" || g.Count < 0 || g.MemoryMiB <= 0) {
			t.Errorf("%s: GPU %+v", it.Name, *g)
		}
		if n := it.Neuron; n != nil && (n.Name == "" || n.Count <= 0 || n.CoresPerDevice <= 0) {
			t.Errorf("%s: Neuron %+v", it.Name, *n)
		}
	}

	// Prices: positive and below any list price EC2 has; every type priced in us-east-1 but a
	// handful sold elsewhere only; GovCloud never cheaper than us-east-1.
	if len(PublishedRegions()) == 0 || !Published(FallbackRegion) {
		t.Fatalf("no published prices for %s: %v", FallbackRegion, PublishedRegions())
	}
	for _, r := range PublishedRegions() {
		known := 0
		for name, p := range s.OnDemandLinux[r] {
			if p <= 0 || p > 1000 {
				t.Errorf("%s %s: on-demand price %v", r, name, p)
			}
			if Lookup(name) != nil {
				known++
			}
			if use1, ok := s.OnDemandLinux[FallbackRegion][name]; ok && strings.HasPrefix(r, "us-gov-") && p < use1 {
				t.Errorf("%s %s: %v, below %s's %v", r, name, p, FallbackRegion, use1)
			}
		}
		if known < len(s.OnDemandLinux[r])*9/10 {
			t.Errorf("%s: %d of %d priced types are in the snapshot", r, known, len(s.OnDemandLinux[r]))
		}
	}
	var unpriced []string
	for _, it := range s.Types {
		if _, ok := s.OnDemandLinux[FallbackRegion][it.Name]; !ok {
			unpriced = append(unpriced, it.Name)
		}
	}
	t.Logf("%d of %d types have no %s price: %v", len(unpriced), len(s.Types), FallbackRegion, unpriced)
	if len(unpriced) > len(s.Types)/100 {
		t.Errorf("%d of %d types have no %s price", len(unpriced), len(s.Types), FallbackRegion)
	}

	for _, r := range Regions() {
		types := TypesIn(r)
		if len(types) < 500 {
			t.Errorf("%s: only %d types", r, len(types))
		}
		for _, it := range types {
			od, ok := OnDemand(r, it.Name)
			if !ok || od <= 0 {
				t.Errorf("%s %s: no on-demand price", r, it.Name)
				continue
			}
			if sp := Spot(od, it.Name, r+"a"); sp <= 0 || sp >= od {
				t.Errorf("%s %s: spot %v not below on-demand %v", r, it.Name, sp, od)
			}
		}
	}
	for _, line := range Summary() {
		t.Log(line)
	}
	if Modelled("ap-south-1") || len(TypesIn("ap-south-1")) != len(TypesIn(FallbackRegion)) {
		t.Errorf("a region not modelled should get %s's types", FallbackRegion)
	}
}

// TestRegionalPrices: a region with a published list is priced from it, not by a rule; a
// region without one says which rule prices it.
func TestRegionalPrices(t *testing.T) {
	for _, r := range []string{"us-gov-east-1", "us-gov-west-1"} {
		if !Published(r) || !Modelled(r) {
			t.Fatalf("%s: published %v, modelled %v", r, Published(r), Modelled(r))
		}
		if got := len(TypesIn(r)); got >= len(TypesIn(FallbackRegion)) {
			t.Errorf("%s offers %d types, as many as %s: its own list should decide", r, got, FallbackRegion)
		}
		for _, name := range []string{"m5.large", "c5.xlarge", "r5.2xlarge", "c6g.large"} {
			got, ok := OnDemand(r, name)
			if want := Load().OnDemandLinux[r][name]; !ok || got != want {
				t.Errorf("%s %s: %v, %v; published %v", r, name, got, ok, want)
			}
		}
		if !strings.HasPrefix(PriceSource(r), "EC2's published on-demand prices") {
			t.Errorf("%s: price source %q", r, PriceSource(r))
		}
	}
	for r, want := range map[string]string{"eu-west-1": "x 1.11", "us-east-2": "rule: us-east-1's", "ap-south-1": "is not in snapshot"} {
		if Published(r) || !strings.Contains(PriceSource(r), want) {
			t.Errorf("%s: published %v, price source %q, want it to say %q", r, Published(r), PriceSource(r), want)
		}
	}
	use1, _ := OnDemand("us-east-1", "m5.large")
	if eu, _ := OnDemand("eu-west-1", "m5.large"); eu != round(use1*1.11) {
		t.Errorf("eu-west-1 m5.large %v, want us-east-1's %v x 1.11", eu, use1)
	}
}
