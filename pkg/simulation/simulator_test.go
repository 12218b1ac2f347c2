package simulation

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

func offline(t *testing.T, profile *config.KubeSchedulerProfile, exclude ...string) *Simulator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := kubefake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	sim, err := New(ctx, profile, Deps{Client: client, InformerFactory: factory, Parallelism: 2}, exclude...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return sim
}

func defaultProfile(t *testing.T) *config.KubeSchedulerProfile {
	t.Helper()
	p, err := DefaultProfile("tailor")
	if err != nil {
		t.Fatalf("DefaultProfile: %v", err)
	}
	return p
}

func TestDefaultProfile(t *testing.T) {
	p := defaultProfile(t)
	if p.SchedulerName != "tailor" {
		t.Errorf("SchedulerName = %q, want tailor", p.SchedulerName)
	}
	enabled := map[string]bool{}
	for _, pl := range p.Plugins.MultiPoint.Enabled {
		enabled[pl.Name] = true
	}
	for _, want := range []string{names.NodeResourcesFit, names.NodeAffinity, names.TaintToleration,
		names.PodTopologySpread, names.InterPodAffinity, names.NodeVolumeLimits, names.DynamicResources} {
		if !enabled[want] {
			t.Errorf("default profile does not enable %s; multiPoint = %v", want, p.Plugins.MultiPoint.Enabled)
		}
	}
	args := map[string]bool{}
	for _, pc := range p.PluginConfig {
		args[pc.Name] = pc.Args != nil
	}
	if !args[names.NodeResourcesFit] {
		t.Errorf("default profile has no NodeResourcesFit args: %v", p.PluginConfig)
	}
	// The profile is a copy: changing it leaves the next one alone.
	p.Plugins.MultiPoint.Enabled = nil
	if len(defaultProfile(t).Plugins.MultiPoint.Enabled) == 0 {
		t.Error("DefaultProfile returned shared state")
	}
}

func pod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

func node(name, cpu string, taints ...corev1.Taint) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}
}

// TestOfflineFilter runs the default profile's Filters with no scheduler, no DRA manager and no
// CSI manager: a pod fits a node with room, not one without, and not one with a taint it does not
// tolerate, each refused by the plugin that would refuse it in the scheduler.
func TestOfflineFilter(t *testing.T) {
	sim := offline(t, defaultProfile(t))
	ctx := context.Background()
	big := node("big", "4")
	small := node("small", "500m")
	tainted := node("tainted", "4", corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
	sim.Use(schedcache.NewSnapshot(nil, []*corev1.Node{big, small, tainted}))

	p := pod("p", "1")
	state, _, status := sim.PreFilter(ctx, p)
	if status != nil {
		t.Fatalf("PreFilter: %v", status)
	}
	for _, tc := range []struct {
		node *corev1.Node
		want string // "" for success, else a substring of the reason
	}{
		{big, ""},
		{small, "Insufficient cpu"},
		{tainted, "untolerated taint"},
	} {
		ni := framework.NewNodeInfo()
		ni.SetNode(tc.node)
		got := sim.Filter(ctx, state, p, ni)
		switch {
		case tc.want == "" && !got.IsSuccess():
			t.Errorf("%s: Filter = %v, want success", tc.node.Name, got)
		case tc.want != "" && (got.IsSuccess() || !strings.Contains(strings.Join(got.Reasons(), "; "), tc.want)):
			t.Errorf("%s: Filter = %v, want a reason containing %q", tc.node.Name, got, tc.want)
		}
	}
	if sim.Parallelizer() == nil {
		t.Error("no Parallelizer")
	}
}

// TestExclude leaves a Filter plugin out by name: without TaintToleration the tainted node fits.
func TestExclude(t *testing.T) {
	sim := offline(t, defaultProfile(t), names.TaintToleration)
	ctx := context.Background()
	tainted := node("tainted", "4", corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule})
	sim.Use(schedcache.NewSnapshot(nil, []*corev1.Node{tainted}))
	p := pod("p", "1")
	state, _, status := sim.PreFilter(ctx, p)
	if status != nil {
		t.Fatalf("PreFilter: %v", status)
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(tainted)
	if s := sim.Filter(ctx, state, p, ni); !s.IsSuccess() {
		t.Errorf("Filter with TaintToleration excluded = %v, want success", s)
	}
}

// TestUsePlanned shows planned nodes to PreFilter: a pod that must avoid app=x is refused on a
// node with the hostname of a planned node that holds such a pod, though the snapshot is empty.
func TestUsePlanned(t *testing.T) {
	sim := offline(t, defaultProfile(t))
	ctx := context.Background()
	x := pod("x", "1")
	x.Labels = map[string]string{"app": "x"}
	planned := framework.NewNodeInfo()
	planned.SetNode(node("planned-0", "4"))
	planned.AddPod(x)

	avoid := pod("avoid", "1")
	avoid.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	// A template for the same planned node: same hostname, the pods placed so far.
	template := framework.NewNodeInfo()
	template.SetNode(node("planned-0", "4"))
	template.AddPod(x)
	other := framework.NewNodeInfo()
	other.SetNode(node("planned-1", "4"))

	for _, tc := range []struct {
		planned []fwk.NodeInfo
		want    bool // whether avoid fits template
	}{
		{planned: nil, want: true},
		{planned: []fwk.NodeInfo{planned}, want: false},
	} {
		sim.Use(schedcache.NewSnapshot(nil, nil), tc.planned...)
		state, _, status := sim.PreFilter(ctx, avoid)
		if status != nil {
			t.Fatalf("PreFilter: %v", status)
		}
		if got := sim.Filter(ctx, state, avoid, template).IsSuccess(); got != tc.want {
			t.Errorf("with %d planned nodes: fits planned-0 = %v, want %v", len(tc.planned), got, tc.want)
		}
		if !sim.Filter(ctx, state, avoid, other).IsSuccess() {
			t.Errorf("with %d planned nodes: refused on planned-1, which holds nothing", len(tc.planned))
		}
	}
}

// TestFilterHalves checks that the two halves of Filter split it exactly: capacity refuses only
// for room, placement only for everything else, and Filter passes exactly when both do.
func TestFilterHalves(t *testing.T) {
	sim := offline(t, defaultProfile(t))
	ctx := context.Background()
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	nodes := []*corev1.Node{node("big", "4"), node("small", "500m"), node("tainted", "4", taint), node("small-tainted", "500m", taint)}
	sim.Use(schedcache.NewSnapshot(nil, nodes))
	p := pod("p", "1")
	state, _, status := sim.PreFilter(ctx, p)
	if status != nil {
		t.Fatalf("PreFilter: %v", status)
	}
	for _, tc := range []struct {
		node                string
		capacity, placement bool
	}{
		{"big", true, true},
		{"small", false, true},
		{"tainted", true, false},
		{"small-tainted", false, false},
	} {
		ni, err := sim.snapshot.NodeInfos().Get(tc.node)
		if err != nil {
			t.Fatal(err)
		}
		capacity := sim.FilterCapacity(ctx, state, p, ni).IsSuccess()
		placement := sim.FilterPlacement(ctx, state, p, ni).IsSuccess()
		whole := sim.Filter(ctx, state, p, ni).IsSuccess()
		if capacity != tc.capacity || placement != tc.placement || whole != (tc.capacity && tc.placement) {
			t.Errorf("%s: capacity %v placement %v filter %v; want %v %v %v", tc.node, capacity, placement, whole,
				tc.capacity, tc.placement, tc.capacity && tc.placement)
		}
	}
}
