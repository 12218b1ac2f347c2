package planner

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// The upstream benchmark's input has the shapes of Karpenter's: the catalog's sizes, overhead,
// offerings and prices, and the workload's classes, draws and groups.
func TestUpstreamBenchmarkInputIsKarpenters(t *testing.T) {
	catalog := upstreamCatalog()
	small, large := catalog[3], catalog[4] // 4 cpu 8Gi, 5 cpu 10Gi
	if small.Labels["size"] != "small" || large.Labels["size"] != "large" || large.Labels["special"] != "optional" || small.Labels["special"] != "" {
		t.Errorf("size labels: %v, %v", small.Labels, large.Labels)
	}
	if got := large.Allocatable(); got.Cpu().MilliValue() != 4900 || got.Memory().Value() != 10<<30-10<<20 {
		t.Errorf("fake-it-4 allocatable %v, want 4900m and 10Gi less 10Mi", got)
	}
	if want := 0.5 + 0.1*float64(10<<30)/1e9; len(large.Offerings) != 5 || math.Abs(large.Offerings[4].PricePerHour-want) > 1e-9 {
		t.Errorf("fake-it-4 offerings %+v, want five at %g", large.Offerings, want)
	}
	spot := 0
	for _, o := range large.Offerings {
		if o.CapacityType == karpv1.CapacityTypeSpot {
			spot++
		}
	}
	if spot != 2 {
		t.Errorf("%d spot offerings, want 2", spot)
	}

	pods := upstreamPods(2002)
	classes, groups, selected := map[string]int{}, map[string]bool{}, map[string]bool{}
	for _, p := range pods {
		classes[p.Name[:len(p.Name)-6]]++
		if v, ok := p.Labels["my-affininity"]; ok {
			groups[v] = true
		}
		for _, c := range p.Spec.TopologySpreadConstraints {
			selected[c.LabelSelector.MatchLabels["my-label"]] = true
		}
	}
	want := map[string]int{classGeneric: 402, classZoneSpread: 400, classHostSpread: 400, classZoneAffinity: 400, classHostAnti: 400}
	for class, n := range want {
		if classes[class] != n {
			t.Errorf("%d pods of %s, want %d (all: %v)", classes[class], class, n, classes)
		}
	}
	if len(groups) != 7 || len(selected) != 7 {
		t.Errorf("%d affinity groups and %d spread selectors, want 7 of each", len(groups), len(selected))
	}
	// The generator seeded with 42 draws, for the first pod, label f, 500m and 512Mi; for the
	// second, b, 1000m and 256Mi: a label drawn after the sizes, or sizes in the other order, give
	// other pods.
	for i, want := range []struct{ label, cpu, mem string }{{"f", "500m", "512Mi"}, {"b", "1", "256Mi"}} {
		r := pods[i].Spec.Containers[0].Resources.Requests
		if pods[i].Labels["my-label"] != want.label || !r.Cpu().Equal(resource.MustParse(want.cpu)) || !r.Memory().Equal(resource.MustParse(want.mem)) {
			t.Errorf("pod %d: %v %v, want %+v", i, pods[i].Labels, r, want)
		}
	}
}
