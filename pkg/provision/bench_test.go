package provision

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// mixedPods returns n pods whose sizes cycle through every pairing of a few cpu and memory
// requests, in an order that is not already biggest first.
func mixedPods(n int) []*corev1.Pod {
	cpus := []string{"100m", "250m", "500m", "1", "1500m"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	out := make([]*corev1.Pod, n)
	for i := range out {
		// 5 and 6 are coprime, so i%5 and i%6 walk all 30 pairs every 30 pods.
		out[i] = newPod(fmt.Sprintf("m%05d", i), cpus[i%len(cpus)], mems[i%len(mems)])
	}
	return out
}

// BenchmarkPlan plans n pending pods of mixed sizes on an empty cluster with one NodePool over
// the whole simulated catalog (133 instance types, 798 offerings).
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			pl := testPlanner(b)
			pending := mixedPods(n)
			pools := []Pool{newPool("default")}
			var claims, iterations int
			var elapsed time.Duration
			for b.Loop() {
				iterations++
				start := time.Now()
				plan := pl.Plan(context.Background(), Input{Pending: pending, Pools: pools})
				elapsed += time.Since(start)
				claims = len(plan.Claims)
				if len(plan.Unplaceable) != 0 {
					b.Fatalf("unplaceable pods: %s", summary(plan))
				}
			}
			b.ReportMetric(float64(n*iterations)/elapsed.Seconds(), "pods/s")
			b.ReportMetric(float64(claims), "claims")
		})
	}
}
