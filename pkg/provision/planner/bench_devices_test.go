package planner

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tailor-sh/tailor/internal/cputime"
)

// BenchmarkPlanDevices plans 64 pods of 8 GPUs each over the whole EC2 catalog (us-west-2 of the
// facts snapshot, every zone and capacity type), on an empty cluster: with each pod's GPUs from a
// ResourceClaim of its own (the DynamicResources plugin and the structured allocator over the
// devices of every GPU type), and beside it the same pods asking nvidia.com/gpu: 8 without
// claims. It reports milliseconds per plan, and the plan's nodes and price to show the two plan
// alike. Run: go test -run '^$' -bench BenchmarkPlanDevices -benchtime 1x ./pkg/provision/planner/
func BenchmarkPlanDevices(b *testing.B) {
	const pods, perPod = 64, 8
	var objects []runtime.Object
	var claimed, extended []*corev1.Pod
	for i := range pods {
		name := fmt.Sprintf("train-%02d", i)
		objects = append(objects, gpuClaim(name, perPod))
		p := claimPod(name, name)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi")}
		claimed = append(claimed, p)
		q := newPod(name, "8", "64Gi")
		q.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = *resource.NewQuantity(perPod, resource.DecimalSI)
		q.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(perPod, resource.DecimalSI)}
		extended = append(extended, q)
	}
	pl, _, _ := devicePlanner(b, objects...)
	pool := newPool("default")
	pool.InstanceTypes = ec2Catalog()
	for _, c := range []struct {
		name    string
		pending []*corev1.Pod
	}{{"claims=dra", claimed}, {"claims=none", extended}} {
		b.Run(fmt.Sprintf("pods=%d/gpus=%d/%s", pods, perPod, c.name), func(b *testing.B) {
			in := Input{Pending: c.pending, Pools: []Pool{pool}}
			var plan *Plan
			cpu := cputime.Process(b)
			for b.Loop() {
				plan = pl.Plan(context.Background(), in)
			}
			// CPU time beside wall time: on a shared machine wall time says as much about the
			// neighbours.
			b.ReportMetric(float64((cputime.Process(b)-cpu).Milliseconds())/float64(b.N), "cpu-ms/plan")
			var price float64
			for _, pc := range plan.Claims {
				price += pc.Options[0].Offering.PricePerHour
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/plan")
			b.ReportMetric(float64(len(plan.Claims)), "nodes")
			b.ReportMetric(price, "$/h")
			b.ReportMetric(float64(len(plan.Unplaceable)), "unplaced")
		})
	}
}
