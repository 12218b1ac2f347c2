package top

import (
	"fmt"
	"strings"
	"testing"
	"time"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// bigFleet is a cluster of nodes nodes across four NodePools, the three zones and both capacity
// types, ten pods each, 200 pending pods with an Event each and 50 decisions.
func bigFleet(nodes int) Cluster {
	types := fake.Catalog()
	var c Cluster
	zones := fake.Zones()
	for i := 0; i < nodes; i++ {
		it := types[i%len(types)]
		ct := []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}[i%2]
		n := node(fmt.Sprintf("ip-10-%d-%d-%d.us-west-2.compute.internal", i/65536, i/256%256, i%256), fmt.Sprintf("pool-%d", i%4),
			it.Name, zones[i%len(zones)], ct, it.Capacity.Cpu().Value(), it.Capacity.Memory().Value()>>30, time.Duration(i)*time.Minute)
		c.Nodes = append(c.Nodes, n)
		for j := 0; j < 10; j++ {
			c.Pods = append(c.Pods, pod("default", fmt.Sprintf("p-%d-%d", i, j), n.Name, 100, 128))
		}
	}
	for i := 0; i < 200; i++ {
		p := pod("default", fmt.Sprintf("pending-%d", i), "", 500, 512)
		c.Pods = append(c.Pods, p)
		c.Events = append(c.Events, event("Pod", p.Namespace, p.Name, "FailedProvisioning", "NodePool pool-0: limits exhausted", t0.Add(-time.Second)))
	}
	for i := 0; i < 50; i++ {
		c.Events = append(c.Events, event("NodeClaim", "", fmt.Sprintf("pool-0-%d", i), "Disrupting", "Disrupting: Empty, deleting m7g.large, saves $0.08/h", t0.Add(-time.Duration(i)*time.Minute)))
	}
	for i := 0; i < 4; i++ {
		c.NodePools = append(c.NodePools, &karpv1.NodePool{})
		c.NodePools[i].Name = fmt.Sprintf("pool-%d", i)
	}
	return c
}

var sink string

// BenchmarkTop5000Nodes: the frame of a 5,000-node, 50,000-pod cluster. "build" makes the
// snapshot from the informers' objects with the pods' requests remembered from the frame before
// (what each watch event costs), "build-cold" without, "render" draws every node
// row of it (the worst case: the screen shows a window), "window" draws what a 60-line terminal
// shows. Each reports ms/frame.
func BenchmarkTop5000Nodes(b *testing.B) {
	c := bigFleet(5000)
	o := fixtureOptions()
	snap, err := Build(c, o)
	if err != nil {
		b.Fatal(err)
	}
	if len(snap.Nodes) != 5000 || snap.Fleet.Pods != 50000 || len(snap.Pending) != 200 {
		b.Fatalf("%d nodes, %d pods, %d pending", len(snap.Nodes), snap.Fleet.Pods, len(snap.Pending))
	}
	frame := func(b *testing.B, f func()) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			f()
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/frame")
	}
	b.Run("build-cold", func(b *testing.B) {
		frame(b, func() {
			if _, err := Build(c, o); err != nil {
				b.Fatal(err)
			}
		})
	})
	// As the live view rebuilds: the pods' requests remembered from the previous frame.
	warm := o
	warm.Requests = NewRequests()
	if _, err := Build(c, warm); err != nil {
		b.Fatal(err)
	}
	b.Run("build", func(b *testing.B) {
		frame(b, func() {
			if _, err := Build(c, warm); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("render", func(b *testing.B) {
		frame(b, func() { sink = Render(snap, View{Renderer: plain()}) })
		if rows := strings.Count(sink, ".compute.internal "); rows != 5000 {
			b.Fatalf("%d node rows drawn", rows)
		}
	})
	b.Run("window", func(b *testing.B) {
		frame(b, func() { sink = Render(snap, View{Renderer: plain(), MaxNodes: 40}) })
	})
}
