package planner

import (
	"fmt"
	"maps"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// The catalog and workload of Karpenter's scheduling benchmark (BenchmarkScheduling2000 and its
// siblings over its fake cloud provider's InstanceTypes(400)) as they are, so that Tailor's plan
// and Karpenter's are compared on the same input. karpenterCatalog and benchPods, beside them,
// are the same sizes without the draws, the overhead and the spot offerings, and stay as they
// were so that earlier figures remain comparable.

// upstreamZones are the zones of Karpenter's fake cloud provider: spot is sold in the first two,
// on demand in all three.
var upstreamZones = []string{"test-zone-1", "test-zone-2", "test-zone-3"}

// upstreamCatalog is Karpenter's fake InstanceTypes(400): type i has i+1 cpu, 2(i+1) GiB and
// 10(i+1) pods; the kubelet reserves 100m cpu and 10Mi of memory; every offering, spot in zones 1
// and 2 and on demand in zones 1 to 3, costs 0.1 per cpu plus 0.1 per 10^9 bytes of memory (of
// capacity, not allocatable). Its labels are the single values of the fake type's requirements
// (the fake type allows three operating systems; no pod here selects one, so Linux stands for
// them): "size" is large above 4 cpu and 8Gi and small otherwise, "special" exists only on large
// types, "integer" is the cpu count.
func upstreamCatalog() []*cloud.InstanceType {
	out := make([]*cloud.InstanceType, 0, 400)
	for i := range 400 {
		n := int64(i + 1)
		name := fmt.Sprintf("fake-it-%d", i)
		labels := map[string]string{
			corev1.LabelInstanceTypeStable: name,
			corev1.LabelArchStable:         karpv1.ArchitectureAmd64,
			corev1.LabelOSStable:           string(corev1.Linux),
			"size":                         "small",
			"integer":                      fmt.Sprint(n),
		}
		if n > 4 && 2*n > 8 {
			labels["size"], labels["special"] = "large", "optional"
		}
		memory := 2 * n << 30
		price := 0.1*float64(n) + 0.1*float64(memory)/1e9
		it := &cloud.InstanceType{
			Name:   name,
			Labels: labels,
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(n, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(10*n, resource.DecimalSI),
			},
			Overhead: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("10Mi"),
			},
		}
		for _, o := range []struct{ zone, capacityType string }{
			{upstreamZones[0], karpv1.CapacityTypeSpot}, {upstreamZones[1], karpv1.CapacityTypeSpot},
			{upstreamZones[0], karpv1.CapacityTypeOnDemand}, {upstreamZones[1], karpv1.CapacityTypeOnDemand},
			{upstreamZones[2], karpv1.CapacityTypeOnDemand},
		} {
			it.Offerings = append(it.Offerings, cloud.Offering{Zone: o.zone, CapacityType: o.capacityType, PricePerHour: price, Available: true})
		}
		out = append(out, it)
	}
	return out
}

// upstreamDiscoveryLabel is the label Karpenter's test helpers put on every object they make
// (for cleanup); no selector of the benchmark reads it.
const upstreamDiscoveryLabel = "testing/cluster"

// upstreamPods is the workload of Karpenter's benchmark for n pods: a fifth each of generic pods,
// zone spread, hostname spread, zone self-affinity and hostname anti-affinity, in that order, the
// rest generic. Every draw comes from one generator seeded with 42, in the order the benchmark
// makes them: per pod its labels, then (spread pods) the selector's labels, then cpu, then
// memory. Generic and spread pods carry my-label with one of seven values and a spread selects
// one of the seven, so it counts generic pods and the other spread class too; the affinity pods
// form seven groups by their my-affininity value (spelt as upstream); the anti-affinity pods all
// repel one another. Karpenter's generator is shared by every benchmark in its process, so its
// figures are for this draw when the benchmark runs first; here every workload starts at 42.
//
// Karpenter's helper also names each pod's container at random, so no two of its pods have the
// same spec. That changes no scheduling answer, but Tailor keeps PreFilter states and groups by
// spec, so upstreamLiteralPods does the same and measures the planner without that sharing;
// upstreamPods names every container "app", as a Deployment's replicas are.
func upstreamPods(n int) []*corev1.Pod { return upstreamWorkload(n, false) }

// upstreamLiteralPods is upstreamPods with a container name of its own for every pod.
func upstreamLiteralPods(n int) []*corev1.Pod { return upstreamWorkload(n, true) }

func upstreamWorkload(n int, literal bool) []*corev1.Pod {
	r := rand.New(rand.NewSource(42))
	values := []string{"a", "b", "c", "d", "e", "f", "g"}
	cpus := []string{"100m", "250m", "500m", "1000m", "1500m"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
	value := func() string { return values[r.Intn(len(values))] }
	out := make([]*corev1.Pod, 0, n)
	// add makes the pod after its labels (and selector) were drawn; the labels of the pod are a
	// copy, so that a selector built from the same map does not select the discovery label.
	add := func(class string, selected map[string]string, shape func(*corev1.Pod)) {
		name := fmt.Sprintf("%s-%05d", class, len(out))
		labels := map[string]string{upstreamDiscoveryLabel: "unspecified"}
		maps.Copy(labels, selected)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: labels},
			Spec: corev1.PodSpec{SchedulerName: "tailor"}}
		if shape != nil {
			shape(pod)
		}
		container := "app"
		if literal {
			container = fmt.Sprintf("app-%05d", len(out))
		}
		cpu := cpus[r.Intn(len(cpus))]
		mem := mems[r.Intn(len(mems))]
		pod.Spec.Containers = []corev1.Container{{Name: container, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}
		out = append(out, pod)
	}
	generic := func(count int) {
		for range count {
			add(classGeneric, map[string]string{"my-label": value()}, nil)
		}
	}
	spread := func(count int, class, key string) {
		for range count {
			add(class, map[string]string{"my-label": value()}, func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": value()}}}}
			})
		}
	}
	term := func(labels map[string]string, key string) []corev1.PodAffinityTerm {
		return []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: key}}
	}
	generic(n / 5)
	spread(n/5, classZoneSpread, corev1.LabelTopologyZone)
	spread(n/5, classHostSpread, corev1.LabelHostname)
	for range n / 5 {
		labels := map[string]string{"my-affininity": value()}
		add(classZoneAffinity, labels, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term(labels, corev1.LabelTopologyZone)}}
		})
	}
	for range n / 5 {
		labels := map[string]string{"app": "nginx"}
		add(classHostAnti, labels, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term(labels, corev1.LabelHostname)}}
		})
	}
	generic(n - len(out))
	return out
}
