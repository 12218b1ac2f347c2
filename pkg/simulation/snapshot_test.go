package simulation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

func snapNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("10")}}}
}

// snapPod is a pod of 1 cpu on node; claim names a PVC it mounts, and antiAffinity gives it a
// required anti-affinity term, so that the NodeInfo's every index moves.
func snapPod(name, node, claim string, antiAffinity bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	if claim != "" {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	}
	if antiAffinity {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}}}
	}
	return p
}

// describeLister renders everything the framework's plugins read from a lister, in name order,
// so that two listers compare as strings.
func describeLister(t *testing.T, l fwk.SharedLister, pvcs ...string) string {
	t.Helper()
	nodes, err := l.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	nodes = slices.SortedFunc(slices.Values(nodes), func(a, b fwk.NodeInfo) int { return strings.Compare(a.Node().Name, b.Node().Name) })
	var b strings.Builder
	for _, ni := range nodes {
		var pods []string
		for _, p := range ni.GetPods() {
			pods = append(pods, p.GetPod().Name)
		}
		slices.Sort(pods)
		got, err := l.NodeInfos().Get(ni.Node().Name)
		if err != nil || got != ni {
			t.Errorf("Get(%s) = %v, %v: not the listed NodeInfo", ni.Node().Name, got, err)
		}
		fmt.Fprintf(&b, "%s taints=%v alloc=%d/%d requested=%d/%d pods=%v affinity=%d anti=%d pvcs=%v\n", ni.Node().Name, ni.Node().Spec.Taints,
			ni.GetAllocatable().GetMilliCPU(), ni.GetAllocatable().GetAllowedPodNumber(), ni.GetRequested().GetMilliCPU(),
			ni.GetNonZeroRequested().GetMilliCPU(), pods, len(ni.GetPodsWithAffinity()), len(ni.GetPodsWithRequiredAntiAffinity()), ni.GetPVCRefCounts())
	}
	for _, lst := range []func() ([]fwk.NodeInfo, error){l.NodeInfos().HavePodsWithAffinityList, l.NodeInfos().HavePodsWithRequiredAntiAffinityList} {
		having, err := lst()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ni := range having {
			names = append(names, ni.Node().Name)
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "having %v\n", names)
	}
	for _, key := range pvcs {
		fmt.Fprintf(&b, "pvc %s used=%v\n", key, l.StorageInfos().IsPVCUsedByPods(key))
	}
	return b.String()
}

// A fork's changes read as a snapshot built from the changed cluster would; Revert leaves the
// snapshot as built, Commit keeps the changes, and nested forks undo only their own.
func TestSnapshotForkRevertCommit(t *testing.T) {
	nodes := []*corev1.Node{snapNode("a"), snapNode("b"), snapNode("c")}
	pods := []*corev1.Pod{snapPod("a1", "a", "data-a1", true), snapPod("a2", "a", "", false),
		snapPod("b1", "b", "data-b1", false), snapPod("c1", "c", "", true)}
	claims := []string{"default/data-a1", "default/data-b1"}
	s, err := NewSnapshot(pods, nodes)
	if err != nil {
		t.Fatal(err)
	}
	built := describeLister(t, s, claims...)
	if want := describeLister(t, schedcache.NewSnapshot(pods, nodes), claims...); built != want {
		t.Fatalf("new snapshot reads\n%s\nwant, as the scheduler's snapshot\n%s", built, want)
	}
	listed, _ := s.NodeInfos().List()
	if names := []string{listed[0].Node().Name, listed[1].Node().Name, listed[2].Node().Name}; !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("nodes listed as %v, want by name", names)
	}

	// Node a taken away (tainted, no pods), a pod placed on b.
	gone := snapNode("a")
	gone.Spec.Taints = []corev1.Taint{{Key: "gone", Effect: corev1.TaintEffectNoSchedule}}
	placed := snapPod("new", "b", "", true)
	changedNodes := []*corev1.Node{gone, nodes[1], nodes[2]}
	changedPods := []*corev1.Pod{pods[2], pods[3], placed}
	// The scheduler's snapshot counts a PVC used by the pods it is built with; the fork counts
	// the pods it was built with less those taken away, not the pods placed since.
	want := describeLister(t, schedcache.NewSnapshot(changedPods, changedNodes), claims...)

	s.Fork()
	if err := s.Replace(gone); err != nil {
		t.Fatal(err)
	}
	listed, _ = s.NodeInfos().List()
	s.AddPod(listed[1], placed)
	if got := describeLister(t, s, claims...); got != want {
		t.Errorf("fork reads\n%s\nwant\n%s", got, want)
	}
	s.Revert()
	if got := describeLister(t, s, claims...); got != built {
		t.Errorf("after Revert the snapshot reads\n%s\nwant as built\n%s", got, built)
	}

	// Nested: the inner fork is committed into the outer, and reverting the outer undoes both.
	s.Fork()
	if err := s.Replace(gone); err != nil {
		t.Fatal(err)
	}
	afterOuter := describeLister(t, s, claims...)
	s.Fork()
	s.AddPod(listed[1], placed)
	s.Commit()
	if got := describeLister(t, s, claims...); got != want {
		t.Errorf("after an inner Commit the outer fork reads\n%s\nwant\n%s", got, want)
	}
	s.Fork()
	s.AddPod(listed[2], snapPod("other", "c", "", false))
	s.Revert()
	if got := describeLister(t, s, claims...); got != want {
		t.Errorf("an inner Revert changed the outer fork: it reads\n%s\nwant\n%s", got, want)
	}
	s.Revert()
	if got := describeLister(t, s, claims...); got != built {
		t.Errorf("after reverting the outer fork the snapshot reads\n%s\nwant as built\n%s (the outer fork alone read\n%s)", got, built, afterOuter)
	}

	// Committing the only fork makes its changes the snapshot's.
	s.Fork()
	if err := s.Replace(gone); err != nil {
		t.Fatal(err)
	}
	s.AddPod(listed[1], placed)
	s.Commit()
	if got := describeLister(t, s, claims...); got != want {
		t.Errorf("after Commit the snapshot reads\n%s\nwant\n%s", got, want)
	}
}

func TestSnapshotErrors(t *testing.T) {
	if _, err := NewSnapshot([]*corev1.Pod{snapPod("p", "missing", "", false)}, []*corev1.Node{snapNode("a")}); err == nil ||
		!strings.Contains(err.Error(), `pod default/p is bound to node "missing"`) {
		t.Errorf("a pod on a node not in the snapshot: %v, want an error naming the pod and the node", err)
	}
	s, err := NewSnapshot(nil, []*corev1.Node{snapNode("a")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(snapNode("a")); err == nil || !strings.Contains(err.Error(), "node a") || !strings.Contains(err.Error(), "not inside a fork") {
		t.Errorf("Replace outside a fork: %v, want an error naming the node", err)
	}
	s.Fork()
	if err := s.Replace(snapNode("z")); err == nil || !strings.Contains(err.Error(), "node z") {
		t.Errorf("Replace of an unknown node: %v, want an error naming it", err)
	}
	s.Revert()
}
