package planner

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkPlanHeap reports the peak heap while one plan places 10,000 pods of Karpenter's
// benchmark mix on Karpenter's benchmark catalog: the live heap is sampled every 5 ms during the
// plan, and the figure is the highest sample less the heap before the plan began.
func BenchmarkPlanHeap(b *testing.B) {
	pl := testPlanner(b)
	pool := newPool("default")
	pool.InstanceTypes = karpenterCatalog()
	in := Input{Pending: benchPods(10000, benchClasses...), Pools: []Pool{pool}}
	var peak, base uint64
	for b.Loop() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base = ms.HeapAlloc
		var high atomic.Uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > high.Load() {
					high.Store(ms.HeapAlloc)
				}
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		})
		plan := pl.Plan(context.Background(), in)
		close(stop)
		wg.Wait()
		if len(plan.Unplaceable) > 0 {
			b.Fatalf("%d pods unplaced", len(plan.Unplaceable))
		}
		peak = max(peak, high.Load())
	}
	b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(len(in.Pending)*b.N)/b.Elapsed().Seconds(), "pods/s")
}
