package provision

import (
	"fmt"
	"testing"
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// BenchmarkQuietRound is what a round that reads no pod costs at issue 35's size, 5,000 nodes and
// 50,000 bound pods: a burst that fits the nodes opens a batch per pod or two (the 30 ms idle
// window), each a quiet round. Each op is one round, 30 ms after the last; B/op is what Tailor
// allocates for a pod the scheduler places alone (the memory benchmark's binding phase).
func BenchmarkQuietRound(b *testing.B) {
	const nodeCount, podCount = 5000, 50000
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range nodeCount {
		mustAdd(b, nodes, readyNode(fmt.Sprintf("node-%d", i), "16", "64Gi"))
	}
	for i := range podCount {
		pod := newPod(fmt.Sprintf("pod-%d", i), "100m", "100Mi")
		pod.Spec.NodeName = fmt.Sprintf("node-%d", i%nodeCount)
		mustAdd(b, pods, pod)
	}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	p := New(Options{SchedulerName: "tailor", Clock: clk, Pods: corelisters.NewPodLister(pods),
		Nodes: corelisters.NewNodeLister(nodes), ClaimLister: karplisters.NewNodeClaimLister(claims)})
	p.quiet() // the first round, which is never quiet
	b.ReportAllocs()
	for b.Loop() {
		clk.Step(30 * time.Millisecond)
		if !p.quiet() {
			b.Fatal("a round over bound pods and ready nodes was not quiet")
		}
	}
}
