package planner

import (
	"fmt"
	"math"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// The upstream catalog has the shapes of Karpenter's fake InstanceTypes(400): sizes, the
// kubelet's reservation, offerings, prices and labels.
func TestUpstreamCatalogIsKarpenters(t *testing.T) {
	catalog := upstreamCatalog()
	if len(catalog) != 400 {
		t.Fatalf("%d types, want 400", len(catalog))
	}
	for _, i := range []int{0, 4, 399} {
		it, n := catalog[i], int64(i+1)
		c := it.Capacity
		if it.Name != fmt.Sprintf("fake-it-%d", i) || c.Cpu().Value() != n || c.Memory().Value() != 2*n<<30 || c.Pods().Value() != 10*n {
			t.Errorf("%s: capacity %v, want %d cpu, %dGi and %d pods", it.Name, c, n, 2*n, 10*n)
		}
		// The kubelet reserves 100m and 10Mi; nothing of the pods.
		a := it.Allocatable()
		if a.Cpu().MilliValue() != 1000*n-100 || a.Memory().Value() != 2*n<<30-10<<20 || a.Pods().Value() != 10*n {
			t.Errorf("%s: allocatable %v, want capacity less 100m and 10Mi", it.Name, a)
		}
		// 0.1 an hour per cpu plus 0.1 per 10^9 bytes of capacity: fake-it-0 costs 0.3147483648.
		price := 0.1*float64(n) + 0.1*float64(2*n<<30)/1e9
		var sold []string
		for _, o := range it.Offerings {
			sold = append(sold, o.CapacityType+"/"+o.Zone)
			if !o.Available || math.Abs(o.PricePerHour-price) > 1e-9 {
				t.Errorf("%s: offering %+v, want available at %g", it.Name, o, price)
			}
		}
		slices.Sort(sold)
		want := []string{karpv1.CapacityTypeOnDemand + "/test-zone-1", karpv1.CapacityTypeOnDemand + "/test-zone-2",
			karpv1.CapacityTypeOnDemand + "/test-zone-3", karpv1.CapacityTypeSpot + "/test-zone-1", karpv1.CapacityTypeSpot + "/test-zone-2"}
		if !slices.Equal(sold, want) {
			t.Errorf("%s: sold as %v, want %v", it.Name, sold, want)
		}
		if it.Labels["integer"] != fmt.Sprint(n) {
			t.Errorf("%s: integer label %q, want %d", it.Name, it.Labels["integer"], n)
		}
	}
	// "large" (and "special") above 4 cpu and 8Gi: fake-it-3 is 4 cpu 8Gi, fake-it-4 5 cpu 10Gi.
	small, large := catalog[3], catalog[4]
	if small.Labels["size"] != "small" || large.Labels["size"] != "large" || large.Labels["special"] != "optional" || small.Labels["special"] != "" {
		t.Errorf("size labels: %v, %v", small.Labels, large.Labels)
	}
}

// The upstream workload has the shapes of Karpenter's makeDiversePods: its classes, the terms
// of each, and the draws of a generator seeded with 42 in the benchmark's order.
func TestUpstreamWorkloadIsKarpenters(t *testing.T) {
	pods := upstreamPods(2002)
	classes, groups, selected := map[string]int{}, map[string]bool{}, map[string]bool{}
	for _, p := range pods {
		classes[p.Name[:len(p.Name)-6]]++
		if p.Namespace != "default" || p.Labels[upstreamDiscoveryLabel] != "unspecified" {
			t.Fatalf("pod %s in %q with labels %v, want default and the discovery label", p.Name, p.Namespace, p.Labels)
		}
		if v, ok := p.Labels["my-affininity"]; ok {
			groups[v] = true
			term := p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
			if term.TopologyKey != corev1.LabelTopologyZone || len(term.LabelSelector.MatchLabels) != 1 || term.LabelSelector.MatchLabels["my-affininity"] != v {
				t.Fatalf("pod %s: affinity term %+v, want its own group in its zone", p.Name, term)
			}
		}
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			term := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
			if term.TopologyKey != corev1.LabelHostname || len(term.LabelSelector.MatchLabels) != 1 || term.LabelSelector.MatchLabels["app"] != "nginx" {
				t.Fatalf("pod %s: anti-affinity term %+v, want app=nginx by hostname", p.Name, term)
			}
		}
		for _, c := range p.Spec.TopologySpreadConstraints {
			if c.MaxSkew != 1 || c.WhenUnsatisfiable != corev1.DoNotSchedule || len(c.LabelSelector.MatchLabels) != 1 {
				t.Fatalf("pod %s: spread %+v, want skew 1, DoNotSchedule, one my-label value", p.Name, c)
			}
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
	// math/rand seeded with 42, drawn per pod as Karpenter does: label, then (spread pods) the
	// selector's value, then cpu, then memory. Pod 402 is the third zone-spread pod (2,002 pods
	// start with 400 generic ones and end with 2): its label and selector differ, which pins
	// their order.
	for _, want := range []struct {
		pod                  int
		label, sel, cpu, mem string
	}{{0, "f", "", "500m", "512Mi"}, {1, "b", "", "1", "256Mi"}, {402, "b", "g", "100m", "512Mi"}} {
		p := pods[want.pod]
		r := p.Spec.Containers[0].Resources.Requests
		sel := ""
		if len(p.Spec.TopologySpreadConstraints) > 0 {
			sel = p.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels["my-label"]
		}
		if p.Labels["my-label"] != want.label || sel != want.sel || !r.Cpu().Equal(resource.MustParse(want.cpu)) || !r.Memory().Equal(resource.MustParse(want.mem)) {
			t.Errorf("pod %d (%s): %v selecting %q, %v; want %+v", want.pod, p.Name, p.Labels, sel, r, want)
		}
	}
}

// The literal workload is the same pods, each with a container name of its own.
func TestUpstreamLiteralWorkloadIsOneSpecAPod(t *testing.T) {
	pods, literal := upstreamPods(500), upstreamLiteralPods(500)
	names := map[string]bool{}
	for i, p := range literal {
		names[p.Spec.Containers[0].Name] = true
		if !equality.Semantic.DeepEqual(p.Spec.Containers[0].Resources, pods[i].Spec.Containers[0].Resources) ||
			!equality.Semantic.DeepEqual(p.Labels, pods[i].Labels) || !equality.Semantic.DeepEqual(p.Spec.Affinity, pods[i].Spec.Affinity) ||
			!equality.Semantic.DeepEqual(p.Spec.TopologySpreadConstraints, pods[i].Spec.TopologySpreadConstraints) {
			t.Fatalf("pod %d differs beyond its container's name: %+v against %+v", i, p, pods[i])
		}
	}
	if len(names) != len(literal) {
		t.Errorf("%d container names for %d pods, want one each", len(names), len(literal))
	}
}
