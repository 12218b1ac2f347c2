package prefilter

import (
	"reflect"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// A kept PodTopologySpread state (see States) is brought up to date with AddPod like the
// others, which keeps its counts exact, and then mended where increments alone cannot:
//   - The plugin remembers the two emptiest domains of each constraint, not all of them. When
//     pods land on those two, a third domain can become the emptiest without the state knowing,
//     and the skew it checks against is then too small. The minimum is found again from the
//     counts, which are whole.
//   - A node that joins the view adds its domain even with no pod on it that counts. The plugin's
//     own PreFilter, asked about the new nodes alone (Simulator.SpreadDomains), says which
//     domains they add, so its rules on topology keys and node inclusion policies stay its own.
//
// The plugin's state type is unexported; its fields are exported ("for comparison during
// testing"), so they are reached by reflection. A state of another shape (a scheduler version
// that changed it) is never kept: spreadStateOf reports false and the planner runs PreFilter
// afresh, as it did for every spreading pod before.
//
// Run afresh per pod, PreFilter counts every pod on every node the plan has opened so far, so a
// plan of many spreading pods grew with the square of its size: at 20,000 pods of Karpenter's mix
// it was 60% of the plan's CPU time.

// spreadStateKey is where PodTopologySpread writes its PreFilter state.
const spreadStateKey fwk.StateKey = "PreFilter" + names.PodTopologySpread

// spreadState is a view of PodTopologySpread's PreFilter state.
type spreadState struct {
	// Keys are the constraints' topology keys.
	Keys []string
	// Counts are the matching pods per domain, a map per constraint.
	Counts []map[string]int
	// paths are the critical paths, an addressable *[2]struct{TopologyValue string; MatchNum int}
	// per constraint.
	paths reflect.Value
}

// SpreadStateOf reads PodTopologySpread's state out of state.
func SpreadStateOf(state fwk.CycleState) (spreadState, bool) {
	data, err := state.Read(spreadStateKey)
	if err != nil {
		return spreadState{}, false
	}
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return spreadState{}, false
	}
	counts, paths := v.Elem().FieldByName("TpValueToMatchNum"), v.Elem().FieldByName("CriticalPaths")
	if !counts.IsValid() || !paths.IsValid() || !counts.CanInterface() || paths.Kind() != reflect.Slice || paths.Len() != counts.Len() {
		return spreadState{}, false
	}
	c, ok := counts.Interface().([]map[string]int)
	constraints := v.Elem().FieldByName("Constraints")
	if !ok || constraints.Kind() != reflect.Slice || constraints.Len() != len(c) {
		return spreadState{}, false
	}
	keys := make([]string, len(c))
	for i := range keys {
		key := constraints.Index(i).FieldByName("TopologyKey")
		if key.Kind() != reflect.String {
			return spreadState{}, false
		}
		keys[i] = key.String()
	}
	for i := range paths.Len() {
		p := paths.Index(i)
		if p.Kind() != reflect.Pointer || p.IsNil() || p.Elem().Kind() != reflect.Array || p.Elem().Len() != 2 {
			return spreadState{}, false
		}
		for j := range 2 {
			path := p.Elem().Index(j)
			if path.Kind() != reflect.Struct || !path.FieldByName("TopologyValue").CanSet() || path.FieldByName("TopologyValue").Kind() != reflect.String ||
				!path.FieldByName("MatchNum").CanSet() || path.FieldByName("MatchNum").Kind() != reflect.Int {
				return spreadState{}, false
			}
		}
	}
	return spreadState{Keys: keys, Counts: c, paths: paths}, true
}

// addDomains adds, with no pods, the domains of added that s does not have yet. added is the
// plugin's state for the nodes that joined the view, with the same constraints.
func (s spreadState) addDomains(added spreadState) bool {
	if len(added.Counts) != len(s.Counts) {
		return false
	}
	for i, domains := range added.Counts {
		for domain := range domains {
			if _, ok := s.Counts[i][domain]; !ok {
				s.Counts[i][domain] = 0
			}
		}
	}
	return true
}

// FindMinima sets each constraint's critical paths to its two emptiest domains, as PreFilter
// does from scratch.
func (s spreadState) FindMinima() {
	for i, counts := range s.Counts {
		if s.emptiest(i) {
			continue
		}
		type path struct {
			domain string
			n      int
		}
		first, second := path{n: maxPaths}, path{n: maxPaths}
		for domain, n := range counts {
			switch {
			case n < first.n || (n == first.n && domain < first.domain):
				first, second = path{domain, n}, first
			case n < second.n || (n == second.n && domain < second.domain):
				second = path{domain, n}
			}
		}
		paths := s.paths.Index(i).Elem()
		for j, p := range []path{first, second} {
			paths.Index(j).FieldByName("TopologyValue").SetString(p.domain)
			paths.Index(j).FieldByName("MatchNum").SetInt(int64(p.n))
		}
	}
}

// emptiest reports whether constraint i's critical paths are two domains that count no pod, as
// the counts say: none can count fewer, so they are the two emptiest, whichever two they are
// (the plugin's own PreFilter picks among equals in map order). Late in a plan of hostname spread
// nearly every mend finds them so, and the scan over every domain, one per claim, was a cost
// that grew with the claims for every pod (8 µs a pod at 20,000 pods of Karpenter's mix, 1 at
// 2,000).
func (s spreadState) emptiest(i int) bool {
	paths := s.paths.Index(i).Elem()
	var domains [2]string
	for j := range 2 {
		p := paths.Index(j)
		domains[j] = p.FieldByName("TopologyValue").String()
		if n, ok := s.Counts[i][domains[j]]; !ok || n != 0 || p.FieldByName("MatchNum").Int() != 0 {
			return false
		}
	}
	return domains[0] != domains[1]
}

// maxPaths is the count PodTopologySpread gives a critical path no domain has filled.
const maxPaths = 1<<31 - 1
