package tailor

import (
	"context"
	"testing"

	corelisters "k8s.io/client-go/listers/core/v1"
	k8scache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

func podAsking(name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
	}}
}

// sizedNode is a node of 4 cpus, 16 GiB and pods pods, carrying on.
func sizedNode(name string, pods int, on ...*corev1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(on...)
	ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI)}}})
	return ni
}

func keptFor(pods ...*corev1.Pod) []scheduling.Kept {
	var out []scheduling.Kept
	for _, p := range pods {
		r := scheduling.PodRequests(p)
		out = append(out, scheduling.Kept{UID: p.UID, MilliCPU: r.Cpu().MilliValue(), Memory: r.Memory().Value()})
	}
	return out
}

// TestFilterKeepsTheRoomOfPodsOnTheirWay checks that a pod is refused the room a plan keeps on a
// node for other pods, and only that room.
func TestFilterKeepsTheRoomOfPodsOnTheirWay(t *testing.T) {
	onTheirWay := []*corev1.Pod{podAsking("w1", "1500m"), podAsking("w2", "1500m")}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		node fwk.NodeInfo
		kept map[string][]scheduling.Kept
		want fwk.Code
	}{
		{name: "the free room is kept: refused", pod: podAsking("p", "2"), node: sizedNode("a", 110),
			kept: map[string][]scheduling.Kept{"a": keptFor(onTheirWay...)}, want: fwk.Unschedulable},
		{name: "room beside the kept room: taken", pod: podAsking("p", "1"), node: sizedNode("a", 110),
			kept: map[string][]scheduling.Kept{"a": keptFor(onTheirWay...)}, want: fwk.Success},
		{name: "room is kept on another node only", pod: podAsking("p", "2"), node: sizedNode("b", 110),
			kept: map[string][]scheduling.Kept{"a": keptFor(onTheirWay...)}, want: fwk.Success},
		// The scheduler's first Filter pass adds the nominated pods to the node: those are not
		// counted again.
		{name: "kept pods the node carries as nominated count once", pod: podAsking("p", "1"), node: sizedNode("a", 110, onTheirWay...),
			kept: map[string][]scheduling.Kept{"a": keptFor(onTheirWay...)}, want: fwk.Success},
		{name: "the pods a node may run are kept too", pod: podAsking("p", "100m"), node: sizedNode("a", 2),
			kept: map[string][]scheduling.Kept{"a": keptFor(onTheirWay...)}, want: fwk.Unschedulable},
		// As NodeResourcesFit, a resource the pod does not request is not checked: only its slot.
		{name: "a pod that requests nothing needs a slot only", pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "uid-b"}},
			node: sizedNode("a", 110), kept: map[string][]scheduling.Kept{"a": keptFor(onTheirWay[0], onTheirWay[1], podAsking("w3", "2"))},
			want: fwk.Success},
	} {
		t.Run(tc.name, func(t *testing.T) { expectFilter(t, tc.kept, tc.pod, tc.node, tc.want, keptMessage) })
	}
}

func TestPreFilterSkipsWhenNoRoomIsKept(t *testing.T) {
	p := &Plugin{capacity: &plans{}}
	if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), podAsking("p", "1"), nil); !st.IsSkip() {
		t.Fatalf("PreFilter: %v, want Skip: nothing held, no room kept", st)
	}
}

// repelling is a pod labelled app=name whose required anti-affinity keeps pods labelled
// app=repels out of its zone.
func repelling(name, repels string) *corev1.Pod {
	p := podAsking(name, "100m")
	p.Namespace, p.Labels = "default", map[string]string{"app": name}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": repels}}}}}}
	return p
}

// TestFilterKeepsPodsThatExcludeEachOtherApart: a pod the plan found no place for (every zone
// holds a pod whose anti-affinity excludes it) must not take the node launched for one of those
// pods, nor another node of its zone, before that pod is on its node, nor may a pod whose own
// anti-affinity excludes a pod on its way; once the pod on its way is on its node (assumed or
// bound), or nominated to the very node filtered, the scheduler's own InterPodAffinity weighs
// them, and the plugin leaves it.
func TestFilterKeepsPodsThatExcludeEachOtherApart(t *testing.T) {
	small := podAsking("small", "100m")
	small.Namespace, small.Labels = "default", map[string]string{"app": "small"}
	other := podAsking("other", "100m")
	other.Namespace, other.Labels = "default", map[string]string{"app": "other"}
	big := repelling("big", "small")
	inZone := func(name, zone string, on ...*corev1.Pod) fwk.NodeInfo {
		ni := sizedNode(name, 110, on...)
		n := ni.Node().DeepCopy()
		n.Labels = map[string]string{corev1.LabelTopologyZone: zone}
		ni.SetNode(n)
		return ni
	}
	// zoned is node a, where the kept pods are on their way to, in us-west-2b.
	zoned := func(on ...*corev1.Pod) fwk.NodeInfo { return inZone("a", "us-west-2b", on...) }
	keptOf := func(p *corev1.Pod) []scheduling.Kept {
		return []scheduling.Kept{{UID: p.UID, MilliCPU: 100, Memory: 1 << 30, Pod: p, Excludes: ExcluderOf(p)}}
	}
	keptBig, keptSmall := keptOf(big), keptOf(small)
	// A term with no namespaces selects in its own pod's namespace; an empty namespaceSelector in
	// every namespace; one with labels by the namespace's labels, which only the scheduler reads.
	elsewhere := repelling("elsewhere", "small")
	elsewhere.Namespace = "other"
	everywhere := repelling("everywhere", "small")
	everywhere.Namespace = "other"
	everywhere.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{}
	labelled := repelling("labelled", "small")
	labelled.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{
		MatchLabels: map[string]string{"team": "a"}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		node fwk.NodeInfo
		kept []scheduling.Kept
		want fwk.Code
		// keptOn is node a, when it is not node itself; nil when a has not registered.
		keptOn fwk.NodeInfo
	}{
		{name: "a pod excluded by the pod on its way: refused", pod: small, node: zoned(), kept: keptBig, want: fwk.UnschedulableAndUnresolvable},
		{name: "a pod it does not exclude: taken", pod: other, node: zoned(), kept: keptBig, want: fwk.Success},
		{name: "a pod whose anti-affinity excludes the pod on its way: refused", pod: repelling("picky", "small"), node: zoned(), kept: keptSmall, want: fwk.UnschedulableAndUnresolvable},
		{name: "the pod on its way is on the node: the scheduler's to weigh", pod: small, node: zoned(big), kept: keptBig, want: fwk.Success},
		{name: "a node without the term's topology label: taken", pod: small, node: sizedNode("a", 110), kept: keptBig, want: fwk.Success},
		{name: "a term of another namespace's pod: taken", pod: small, node: zoned(), kept: keptOf(elsewhere), want: fwk.Success},
		{name: "a term of every namespace: refused", pod: small, node: zoned(), kept: keptOf(everywhere), want: fwk.UnschedulableAndUnresolvable},
		{name: "a term by namespace labels: the scheduler's to weigh", pod: small, node: zoned(), kept: keptOf(labelled), want: fwk.Success},
		{name: "the pod itself, listed on a node it has left: taken", pod: big, node: zoned(), kept: keptOf(repelling("big", "big")), want: fwk.Success},
		// The scheduler counts a nominated pod only on its own node: the rest of its zone is
		// Tailor's to keep.
		{name: "another node of the zone of the pod on its way: refused", pod: small, node: inZone("b", "us-west-2b"), keptOn: zoned(), kept: keptBig, want: fwk.UnschedulableAndUnresolvable},
		{name: "a pod whose anti-affinity excludes the pod on its way, another node of its zone: refused", pod: repelling("picky", "small"), node: inZone("b", "us-west-2b"), keptOn: zoned(), kept: keptSmall, want: fwk.UnschedulableAndUnresolvable},
		{name: "a node of another zone: taken", pod: small, node: inZone("c", "us-west-2c"), keptOn: zoned(), kept: keptBig, want: fwk.Success},
		{name: "the pod on its way is on its node: the scheduler's to weigh in the whole zone", pod: small, node: inZone("b", "us-west-2b"), keptOn: zoned(big), kept: keptBig, want: fwk.Success},
		{name: "the node of the pod on its way has not registered: taken", pod: small, node: inZone("b", "us-west-2b"), kept: keptBig, want: fwk.Success},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []fwk.NodeInfo{tc.node}
			if tc.keptOn != nil {
				nodes = append(nodes, tc.keptOn)
			}
			expectFilter(t, map[string][]scheduling.Kept{"a": tc.kept}, tc.pod, tc.node, tc.want, repelledMessage, nodes...)
		})
	}
}

// expectFilter runs the plugin's PreFilter, over the cluster's nodes (node alone by default),
// and Filter for pod on node with the room kept, and checks Filter's code and, for a refusal,
// its message.
func expectFilter(t *testing.T, kept map[string][]scheduling.Kept, pod *corev1.Pod, node fwk.NodeInfo, want fwk.Code, refusal string, cluster ...fwk.NodeInfo) {
	t.Helper()
	p := &Plugin{capacity: &plans{kept: kept}}
	state := framework.NewCycleState()
	if len(cluster) == 0 {
		cluster = []fwk.NodeInfo{node}
	}
	if _, st := p.PreFilter(context.Background(), state, pod, cluster); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v, want success: there is kept room to weigh", st)
	}
	st := p.Filter(context.Background(), state, pod, node)
	if st.Code() != want {
		t.Fatalf("Filter: %v, want %v", st, want)
	}
	if !st.IsSuccess() && st.Message() != refusal {
		t.Errorf("Filter says %q, want %q", st.Message(), refusal)
	}
}

// TestBarredDomainsAreReadFromTheSchedulersSnapshot: in the scheduler, PreFilter finds the node a
// pod is on its way to in the cycle's snapshot, and leaves out a pod the scheduler's informer has
// bound to another node since the provisioner noted its room (the index lags behind by a round):
// it bars nothing.
func TestBarredDomainsAreReadFromTheSchedulersSnapshot(t *testing.T) {
	small := podAsking("small", "100m")
	small.Namespace, small.Labels = "default", map[string]string{"app": "small"}
	big := repelling("big", "small")
	zone := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: "us-west-2b"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
	}
	nodes := []*corev1.Node{zone("a"), zone("b")}
	kept := map[string][]scheduling.Kept{"a": {{UID: big.UID, MilliCPU: 100, Memory: 1 << 30, Pod: big, Excludes: ExcluderOf(big)}}}
	for _, tc := range []struct {
		name     string
		informer *corev1.Pod // big as the scheduler's informer has it
		want     fwk.Code
	}{
		{name: "pending: its zone barred", informer: big, want: fwk.UnschedulableAndUnresolvable},
		{name: "bound to another node since: nothing barred", informer: boundTo(big, "c"), want: fwk.Success},
		{name: "bound to its node since: the scheduler's to weigh", informer: boundTo(big, "a"), want: fwk.Success},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := k8scache.NewIndexer(k8scache.MetaNamespaceKeyFunc, k8scache.Indexers{k8scache.NamespaceIndex: k8scache.MetaNamespaceIndexFunc})
			if err := pods.Add(tc.informer); err != nil {
				t.Fatal(err)
			}
			var placed []*corev1.Pod
			if tc.informer.Spec.NodeName == "a" {
				placed = append(placed, tc.informer)
			}
			snap := cache.NewSnapshot(placed, nodes)
			p := &Plugin{capacity: &plans{kept: kept}, snapshot: snap, pods: corelisters.NewPodLister(pods)}
			state := framework.NewCycleState()
			if _, st := p.PreFilter(context.Background(), state, small, nil); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			b, err := snap.NodeInfos().Get("b")
			if err != nil {
				t.Fatal(err)
			}
			if st := p.Filter(context.Background(), state, small, b); st.Code() != tc.want {
				t.Errorf("Filter on node b of the same zone: %v, want %v", st, tc.want)
			}
		})
	}
}

func boundTo(pod *corev1.Pod, node string) *corev1.Pod {
	out := pod.DeepCopy()
	out.Spec.NodeName = node
	return out
}
