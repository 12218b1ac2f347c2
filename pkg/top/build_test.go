package top

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tailor-sh/tailor/pkg/provision/bound"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

func mustSelector(t testing.TB, s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// Build's figures are the objects' own: each node priced by its labels' offering, requests of
// the pods that have not finished, the bound of exactly those pods.
func TestBuildFigures(t *testing.T) {
	c := fixture()
	o := fixtureOptions()
	snap, err := Build(c, o)
	if err != nil {
		t.Fatal(err)
	}
	var price float64
	for _, n := range c.Nodes {
		p, ok := o.Prices.Price(n.Labels["node.kubernetes.io/instance-type"], n.Labels["topology.kubernetes.io/zone"], n.Labels["karpenter.sh/capacity-type"])
		if !ok {
			t.Fatalf("the catalog does not price node %s", n.Name)
		}
		price += p
	}
	f := snap.Fleet
	if f.Nodes != 4 || f.Pods != 6 || f.PendingPods != 2 || f.UnpricedNodes != 0 || math.Abs(f.PricePerHour-price) > 1e-9 {
		t.Errorf("fleet %+v, want 4 nodes, 6 pods, 2 pending, $%.4f/h", f, price)
	}
	var running = c.Pods[:6]
	// top takes the plain relaxation of the summed requests (bound.LowerBoundOf), not LowerBound's
	// per-size floors: those read every pod's requests again.
	var cpu, mem float64
	for _, p := range running {
		r := scheduling.PodRequests(p)
		cpu += float64(r.Cpu().MilliValue()) / 1e3
		mem += float64(r.Memory().Value()) / (1 << 30)
	}
	lower, err := bound.LowerBoundOf(cpu, mem, o.Catalog)
	if err != nil || math.Abs(f.LowerBoundPerHour-lower) > 1e-9 || math.Abs(f.PriceToBound-price/lower) > 1e-9 {
		t.Errorf("bound %v (ratio %v), want %v (%v)", f.LowerBoundPerHour, f.PriceToBound, lower, err)
	}
	if f.Usage.CPURequestedMilli != 3000+7000+2000+100 {
		t.Errorf("cpu requested %d: the finished job counts, or a running pod does not", f.Usage.CPURequestedMilli)
	}
	byName := map[string]Node{}
	for _, n := range snap.Nodes {
		byName[n.Name] = n
	}
	if n := byName["ip-10-0-2-20.us-west-2.compute.internal"]; n.State != "Disrupting" || n.NodeClaim != "default-fghij" || n.Pods != 1 {
		t.Errorf("tainted node: %+v", n)
	}
	if n := byName["system-1"]; n.NodePool != "" || !n.Priced {
		t.Errorf("a node no NodePool owns is still shown and priced: %+v", n)
	}
	if len(snap.NodePools) != 2 || snap.NodePools[0].Nodes != 2 || snap.NodePools[0].Capacity["cpu"] != "12" || snap.NodePools[0].Limits["cpu"] != "100" {
		t.Errorf("NodePools %+v", snap.NodePools)
	}
	if len(snap.Launching) != 1 || snap.Launching[0].Name != "default-x7k2p" || snap.Launching[0].State != "Launched" {
		t.Errorf("launching %+v", snap.Launching)
	}
}

// A pending pod shows Tailor's FailedProvisioning over the scheduler's later FailedScheduling,
// which says only that no node fits yet; a pod nobody spoke of shows its nomination.
func TestPendingReasons(t *testing.T) {
	snap, err := Build(fixture(), fixtureOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Pending) != 2 {
		t.Fatalf("pending %+v", snap.Pending)
	}
	if p := snap.Pending[0]; p.Pod != "default/huge-0" || p.Reason != "FailedProvisioning" {
		t.Errorf("huge-0: %+v", p)
	}
	if p := snap.Pending[1]; p.Reason != "" || p.Nominated == "" {
		t.Errorf("inflate-3: %+v", p)
	}
}

// One decision's Events on several claims are one decision with its savings once; Events on
// Nodes are not counted again; costs read as negative savings.
func TestDecisions(t *testing.T) {
	snap, err := Build(fixture(), fixtureOptions())
	if err != nil {
		t.Fatal(err)
	}
	d := snap.Decisions
	if len(d) != 3 {
		t.Fatalf("decisions %+v", d)
	}
	if len(d[0].NodeClaims) != 2 || d[0].SavingsPerHour != 0.31 || d[1].SavingsPerHour != 0.07 || d[2].SavingsPerHour != -0.08 {
		t.Errorf("decisions %+v", d)
	}
	o := fixtureOptions()
	o.Decisions = 1
	if snap, _ := Build(fixture(), o); len(snap.Decisions) != 1 || len(snap.Decisions[0].NodeClaims) != 2 {
		t.Errorf("the latest decision only: %+v", snap.Decisions)
	}
}

// Filtering narrows every figure to the nodes shown, and the claims that would be such nodes.
func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		filter    Filter
		nodes     int
		pools     int
		launching int
	}{
		{Filter{NodePool: "gpu"}, 1, 1, 0},
		{Filter{Selector: mustSelector(t, "karpenter.sh/capacity-type=spot")}, 1, 2, 1},
		{Filter{NodePool: "default", Selector: mustSelector(t, "topology.kubernetes.io/zone=us-west-2a")}, 1, 1, 1},
	} {
		o := fixtureOptions()
		o.Filter = tc.filter
		snap, err := Build(fixture(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Nodes) != tc.nodes || snap.Fleet.Nodes != tc.nodes || len(snap.NodePools) != tc.pools || len(snap.Launching) != tc.launching {
			t.Errorf("%s: %d nodes, %d pools, %d launching", tc.filter, len(snap.Nodes), len(snap.NodePools), len(snap.Launching))
		}
	}
}

func TestSortKeys(t *testing.T) {
	for _, k := range SortKeys {
		o := fixtureOptions()
		o.Sort = k
		snap, err := Build(fixture(), o)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(snap.Nodes); i++ {
			a, b := snap.Nodes[i-1], snap.Nodes[i]
			var wrong bool
			switch k {
			case SortPrice:
				wrong = a.PricePerHour < b.PricePerHour
			case SortPods:
				wrong = a.Pods < b.Pods
			case SortAge:
				wrong = a.Created.After(b.Created)
			case SortName:
				wrong = a.Name > b.Name
			case SortNodePool:
				wrong = a.NodePool > b.NodePool
			}
			if wrong {
				t.Errorf("--sort %s: %s before %s", k, a.Name, b.Name)
			}
		}
		if _, err := ParseSortKey(string(k)); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseSortKey("size"); err == nil {
		t.Error("--sort size accepted")
	}
}

// The memo gives what reading the pod gives, reads a pod again when its resourceVersion changes
// (an in-place resize), and forgets pods that are gone.
func TestRequestsMemo(t *testing.T) {
	r := NewRequests()
	p := pod("default", "a", "n1", 500, 256)
	if cpu, mem := r.of(p); cpu != 500 || mem != 256<<20 {
		t.Fatalf("first read: %d, %d", cpu, mem)
	}
	r.sweep()
	resized := pod("default", "a", "n1", 1500, 256)
	resized.ResourceVersion = "2"
	if cpu, _ := r.of(resized); cpu != 1500 {
		t.Errorf("after a resize: %dm", cpu)
	}
	r.sweep()
	r.sweep()
	if len(r.pods) != 0 {
		t.Errorf("a pod no build met is still remembered: %v", r.pods)
	}
}
