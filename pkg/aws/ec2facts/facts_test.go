package ec2facts

import "testing"

// TestSnapshotIsWhole: every type has what DescribeInstanceTypes must say of it, and every
// modelled region offers types at prices with spot below on-demand.
func TestSnapshotIsWhole(t *testing.T) {
	s := Load()
	if s.Source.Commit == "" || s.Source.CommitDate == "" {
		t.Fatalf("snapshot has no source commit or date: %+v", s.Source)
	}
	for _, it := range s.Types {
		if it.VCPUs <= 0 || it.MemoryMiB <= 0 || it.Arch == "" || it.IPv4PerENI <= 0 || len(it.Cards) == 0 {
			t.Errorf("%s: incomplete: %+v", it.Name, it)
		}
		found := false
		for _, c := range it.Cards {
			found = found || c.Index == it.DefaultCard
		}
		if !found {
			t.Errorf("%s: default network card %d is not among its cards", it.Name, it.DefaultCard)
		}
	}
	for _, r := range Regions() {
		types := TypesIn(r)
		if len(types) < 1000 {
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
	if Modelled("ap-south-1") || len(TypesIn("ap-south-1")) != len(TypesIn(FallbackRegion)) {
		t.Errorf("a region not modelled should get %s's types", FallbackRegion)
	}
}
