package simulation

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// NoRoom says a pod has no room on a node only where Filter refuses it, for its cpu, its memory
// or its pod slot; and says nothing when the profile does not run NodeResourcesFit.
func TestNoRoom(t *testing.T) {
	ctx := context.Background()
	sim := offline(t, defaultProfile(t))
	if !sim.ResourcesFiltered() {
		t.Fatal("the default profile's Filter runs NodeResourcesFit, but ResourcesFiltered says no")
	}
	n := node("n", "4") // 4 cpu, 8Gi, 110 pods
	running := pod("running", "3")
	running.Spec.NodeName = "n"
	snap := schedcache.NewSnapshot([]*corev1.Pod{running}, []*corev1.Node{n})
	sim.Use(snap)
	ni, err := snap.NodeInfos().Get("n")
	if err != nil {
		t.Fatal(err)
	}
	withMemory := func(p *corev1.Pod, mem string) *corev1.Pod {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
		return p
	}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		noRoom bool
	}{
		{"half a cpu", pod("p", "500m"), false},
		{"the last cpu", pod("p", "1"), false},
		{"a cpu and a half", pod("p", "1500m"), true},
		{"memory that fits", withMemory(pod("p", "100m"), "7Gi"), false},
		{"more memory than the node has", withMemory(pod("p", "100m"), "9Gi"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, _, status := sim.PreFilter(ctx, tc.pod)
			if status != nil {
				t.Fatalf("PreFilter: %v", status)
			}
			noRoom := sim.NoRoom(MinRequests(tc.pod), ni)
			if noRoom != tc.noRoom {
				t.Errorf("NoRoom = %v, want %v", noRoom, tc.noRoom)
			}
			if fits := sim.Filter(ctx, state, tc.pod, ni).IsSuccess(); fits == noRoom {
				t.Errorf("NoRoom = %v, and Filter says fits = %v: they must disagree", noRoom, fits)
			}
		})
	}

	// A full node by pod count.
	tiny := node("tiny", "4")
	tiny.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("1")
	onTiny := pod("on-tiny", "100m")
	onTiny.Spec.NodeName = "tiny"
	tinySnap := schedcache.NewSnapshot([]*corev1.Pod{onTiny}, []*corev1.Node{tiny})
	tinyInfo, _ := tinySnap.NodeInfos().Get("tiny")
	if !sim.NoRoom(MinRequests(pod("p", "100m")), tinyInfo) {
		t.Error("a node whose one pod slot is taken has room, NoRoom says")
	}

	profile := defaultProfile(t)
	profile.Plugins.Filter.Disabled = append(profile.Plugins.Filter.Disabled, config.Plugin{Name: names.NodeResourcesFit})
	without := offline(t, profile)
	if without.ResourcesFiltered() || without.NoRoom(MinRequests(pod("p", "64")), ni) {
		t.Error("with NodeResourcesFit disabled, NoRoom must not rule a node out")
	}
}
