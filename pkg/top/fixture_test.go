package top

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// t0 is the fixture's "now".
var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func node(name, pool, it, zone, ct string, cpu, memGi int64, created time.Duration) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-created)),
		Labels: map[string]string{karpv1.NodePoolLabelKey: pool, corev1.LabelInstanceTypeStable: it, corev1.LabelTopologyZone: zone,
			karpv1.CapacityTypeLabelKey: ct, corev1.LabelTopologyRegion: fake.Region}}}
	if pool == "" {
		delete(n.Labels, karpv1.NodePoolLabelKey)
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu*1000-90, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memGi<<30-(600<<20), resource.BinarySI)}
	n.Status.Allocatable = alloc
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI)}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

func pod(ns, name, nodeName string, cpuMilli, memMi int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), ResourceVersion: "1", CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))},
		Spec: corev1.PodSpec{NodeName: nodeName, SchedulerName: "tailor", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(memMi<<20, resource.BinarySI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func event(kind, ns, name, reason, note string, at time.Time) *eventsv1.Event {
	return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", name, at.UnixNano())}, EventTime: metav1.NewMicroTime(at),
		Regarding: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name}, Reason: reason, Note: note}
}

// fixture is a small fleet with one of everything the view shows: two NodePools (one with
// limits), a node no NodePool owns, a node being disrupted, a claim launching, pending pods with
// and without a reason, and a two-claim decision.
func fixture() Cluster {
	var c Cluster
	c.Nodes = []*corev1.Node{
		node("ip-10-0-1-10.us-west-2.compute.internal", "default", "m7g.xlarge", "us-west-2a", "on-demand", 4, 16, 3*time.Hour),
		node("ip-10-0-2-20.us-west-2.compute.internal", "default", "c7g.2xlarge", "us-west-2b", "spot", 8, 16, 40*time.Minute),
		node("ip-10-0-3-30.us-west-2.compute.internal", "gpu", "g5.xlarge", "us-west-2c", "on-demand", 4, 16, 50*time.Hour),
		node("system-1", "", "m6i.large", "us-west-2a", "on-demand", 2, 8, 30*24*time.Hour),
	}
	c.Nodes[1].Spec.Taints = []corev1.Taint{karpv1.DisruptedNoScheduleTaint}
	for i := 0; i < 3; i++ {
		c.Pods = append(c.Pods, pod("default", fmt.Sprintf("inflate-%d", i), c.Nodes[0].Name, 1000, 1024))
	}
	c.Pods = append(c.Pods, pod("default", "big-0", c.Nodes[1].Name, 7000, 4096), pod("ml", "train-0", c.Nodes[2].Name, 2000, 8192),
		pod("kube-system", "coredns-0", "system-1", 100, 70))
	done := pod("default", "job-0", c.Nodes[0].Name, 2000, 1024)
	done.Status.Phase = corev1.PodSucceeded
	c.Pods = append(c.Pods, done, pod("default", "huge-0", "", 200000, 1024), pod("default", "inflate-3", "", 1000, 1024))
	c.Pods[len(c.Pods)-1].Status.NominatedNodeName = "ip-10-0-4-40.us-west-2.compute.internal"

	limited := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	limited.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("100")}
	c.NodePools = []*karpv1.NodePool{limited, {ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}}

	claim := func(name, pool, nodeName string, conds ...string) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-20 * time.Second)),
			Labels: map[string]string{karpv1.NodePoolLabelKey: pool}}}
		nc.Status.NodeName = nodeName
		for _, cond := range conds {
			nc.SetCondition(cond, metav1.ConditionTrue, cond, "", t0)
		}
		return nc
	}
	launching := claim("default-x7k2p", "default", "", karpv1.ConditionTypeLaunched)
	launching.Labels[corev1.LabelInstanceTypeStable], launching.Labels[corev1.LabelTopologyZone], launching.Labels[karpv1.CapacityTypeLabelKey] = "m7g.large", "us-west-2a", "spot"
	c.NodeClaims = []*karpv1.NodeClaim{
		claim("default-abcde", "default", c.Nodes[0].Name, karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized),
		claim("default-fghij", "default", c.Nodes[1].Name, karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized),
		claim("gpu-klmno", "gpu", c.Nodes[2].Name, karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized),
		launching,
	}
	const replace = "Disrupting: Underutilized, replacing 2 nodes (m7g.2xlarge, m7g.2xlarge) with m7g.xlarge, saves $0.31/h"
	c.Events = []*eventsv1.Event{
		event("Pod", "default", "huge-0", "FailedScheduling", "0/4 nodes are available: 4 Insufficient cpu.", t0.Add(-30*time.Second)),
		event("Pod", "default", "huge-0", "FailedProvisioning", "NodePool default: Insufficient cpu; largest instance type c7g.16xlarge", t0.Add(-50*time.Second)),
		event("Pod", "default", "huge-0", "FailedScheduling", "0/4 nodes are available: 4 Insufficient cpu.", t0.Add(-10*time.Second)),
		event("NodeClaim", "", "default-old1", "Disrupting", replace, t0.Add(-10*time.Minute)),
		event("NodeClaim", "", "default-old2", "Disrupting", replace, t0.Add(-10*time.Minute+time.Second)),
		event("Node", "", "ip-10-0-9-90.us-west-2.compute.internal", "Disrupting", replace, t0.Add(-10*time.Minute)),
		event("NodeClaim", "", "default-old3", "Disrupting", "Disrupting: Empty, deleting c7g.large, saves $0.07/h", t0.Add(-2*time.Hour)),
		event("NodeClaim", "", "default-old4", "Disrupting", "Disrupting: Drifted (NodePoolDrifted), replacing m7g.large with m7g.xlarge, costs $0.08/h more", t0.Add(-3*time.Hour)),
	}
	return c
}

// fixtureOptions price the fixture with the simulated catalog, as `tailor top` does against the
// sandbox on the fake cloud.
func fixtureOptions() Options {
	catalog := fake.Catalog()
	prices := NewCatalogPrices(catalog)
	return Options{Now: t0, Prices: prices, PricesName: "simulated catalog", Catalog: Repriced(catalog, prices)}
}
