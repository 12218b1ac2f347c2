package planner

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/provision/bound"
)

// The workload of Karpenter's scheduling benchmark (scheduling_benchmark_test.go): five equal
// classes of pods, each selecting only its own pods, so that classes do not interact.
const (
	classGeneric      = "generic"
	classZoneSpread   = "zone-spread"
	classHostSpread   = "hostname-spread"
	classZoneAffinity = "zone-affinity"
	classHostAnti     = "hostname-anti-affinity"
	benchClassLabel   = "bench.tailor.sh/class"
)

var benchClasses = []string{classGeneric, classZoneSpread, classHostSpread, classZoneAffinity, classHostAnti}

// benchPods returns n pods, split equally between classes (the first n%len(classes) classes get
// one more). Within a class, cpu and memory cycle through Karpenter's benchmark sizes; 5 and 6 are
// coprime, so every 30 pods of a class walk all 30 pairings.
func benchPods(n int, classes ...string) []*corev1.Pod {
	cpus := []string{"100m", "250m", "500m", "1", "1500m"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	out := make([]*corev1.Pod, 0, n)
	for c, class := range classes {
		count := n / len(classes)
		if c < n%len(classes) {
			count++
		}
		for j := range count {
			name := fmt.Sprintf("%s-%05d", class, j)
			out = append(out, classPod(class, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
					Labels: map[string]string{benchClassLabel: class}},
				Spec: corev1.PodSpec{SchedulerName: "tailor", Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse(cpus[j%len(cpus)]),
						corev1.ResourceMemory: resource.MustParse(mems[j%len(mems)]),
					},
				}}}},
			}))
		}
	}
	return out
}

// mixedPods returns n pods without constraints whose sizes cycle through every pairing of the
// benchmark's cpu and memory requests, in an order that is not already biggest first.
func mixedPods(n int) []*corev1.Pod {
	cpus := []string{"100m", "250m", "500m", "1", "1500m"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("m%05d", i), cpus[i%len(cpus)], mems[i%len(mems)])
	}
	return out
}

// classPod gives pod the constraint of its class, over the pods of that class.
func classPod(class string, pod *corev1.Pod) *corev1.Pod {
	own := &metav1.LabelSelector{MatchLabels: map[string]string{benchClassLabel: class}}
	spread := func(key string) []corev1.TopologySpreadConstraint {
		return []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: own}}
	}
	term := func(key string) []corev1.PodAffinityTerm {
		return []corev1.PodAffinityTerm{{LabelSelector: own, TopologyKey: key}}
	}
	switch class {
	case classZoneSpread:
		pod.Spec.TopologySpreadConstraints = spread(corev1.LabelTopologyZone)
	case classHostSpread:
		pod.Spec.TopologySpreadConstraints = spread(corev1.LabelHostname)
	case classZoneAffinity:
		pod.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term(corev1.LabelTopologyZone)}}
	case classHostAnti:
		pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term(corev1.LabelHostname)}}
	}
	return pod
}

// karpenterCatalog has the shape of the catalog of Karpenter's scheduling benchmark
// (fake.InstanceTypes(400)): type i has i+1 cpu, 2(i+1) GiB and 10(i+1) pods, no overhead, and
// costs 0.1 per cpu plus 0.1 per GiB an hour. Karpenter's also sells spot in two zones; this one
// is on demand only, in three.
func karpenterCatalog() []*cloud.InstanceType {
	out := make([]*cloud.InstanceType, 0, 400)
	for i := range 400 {
		n := int64(i + 1)
		name := fmt.Sprintf("fake-it-%d", i)
		it := &cloud.InstanceType{
			Name: name,
			Labels: map[string]string{
				corev1.LabelInstanceTypeStable: name,
				corev1.LabelArchStable:         karpv1.ArchitectureAmd64,
				corev1.LabelOSStable:           string(corev1.Linux),
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(n, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(2*n<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(10*n, resource.DecimalSI),
			},
		}
		for _, zone := range fake.Zones() {
			it.Offerings = append(it.Offerings, cloud.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand,
				PricePerHour: 0.1*float64(n) + 0.1*float64(2*n), Available: true})
		}
		out = append(out, it)
	}
	return out
}

// ec2Catalog is us-west-2 from the snapshot of EC2's published facts, as `tailor plan` sees it.
func ec2Catalog() []*cloud.InstanceType {
	types, err := tailoraws.FactsCatalog(fake.Region, fake.Zones())
	if err != nil {
		panic(err)
	}
	return types
}

// BenchmarkPlan plans pending pods on an empty cluster with one NodePool without requirements or
// limits over a whole catalog, as Karpenter's scheduling benchmark does (Scheduler.Solve, no
// existing nodes). Besides speed it reports how good the plan is: NodeClaims, their price (each
// at its cheapest option) and that price over the LP lower bound for the same pods and catalog.
// Pods the plan could not place are reported as "unplaced" and left out of price and bound.
func BenchmarkPlan(b *testing.B) {
	// Karpenter's benchmark goes to 20,000 pods; the EC2-like catalog stops at 5,000, where a
	// plan already takes seconds.
	catalogs := []struct {
		name  string
		types func() []*cloud.InstanceType
		sizes []int
	}{
		{"karpenter", karpenterCatalog, []int{100, 500, 2000, 5000, 10000, 20000}}, // 400 types, 1,200 offerings
		{"fake", fake.Catalog, []int{100, 500, 2000, 5000}},                        // 407 types, 2,442 offerings
		{"ec2", ec2Catalog, []int{100, 500, 2000}},                                 // us-west-2 of the EC2 snapshot: 1,345 types, 8,070 offerings
	}
	mixes := []struct {
		name    string
		classes []string
	}{
		{"diverse", benchClasses},
		{"generic", []string{classGeneric}},
	}
	for _, cat := range catalogs {
		for _, n := range cat.sizes {
			for _, mix := range mixes {
				name := fmt.Sprintf("catalog=%s/pods=%d/mix=%s", cat.name, n, mix.name)
				b.Run(name, func(b *testing.B) {
					benchmarkPlan(b, cat.types(), benchPods(n, mix.classes...))
				})
			}
		}
	}
}

func benchmarkPlan(b *testing.B, catalog []*cloud.InstanceType, pending []*corev1.Pod) {
	pl := testPlanner(b)
	pool := newPool("default")
	pool.InstanceTypes = catalog
	in := Input{Pending: pending, Pools: []Pool{pool}}
	var plan *Plan
	cpu := processCPU(b)
	for b.Loop() {
		plan = pl.Plan(context.Background(), in)
	}
	// CPU time, beside pods/s: on a shared machine wall time says as much about the neighbours.
	b.ReportMetric((processCPU(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
	var price float64
	var placed []*corev1.Pod
	for _, c := range plan.Claims {
		price += c.Options[0].Offering.PricePerHour
		placed = append(placed, c.Pods...)
	}
	lower, err := bound.LowerBound(placed, catalog)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(pending)*b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(len(plan.Claims)), "nodes")
	b.ReportMetric(price, "$/h")
	if lower > 0 {
		b.ReportMetric(price/lower, "price/bound")
	}
	b.ReportMetric(float64(len(plan.Unplaceable)), "unplaced")
}

// processCPU is the CPU time the test process has used so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("reading the process's CPU time: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
