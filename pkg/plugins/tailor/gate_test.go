package tailor

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// A pod waiting for a node launched for it stays out of the queue until that node is there, Ready
// and registered; a pod that waits for nothing, or whose node can take it, goes in.
func TestPreEnqueueHoldsAPodUntilItsNodeCanTakeIt(t *testing.T) {
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	node := func(name string, ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	for _, n := range []*corev1.Node{
		node("up-c", corev1.ConditionTrue),
		node("joined-d", corev1.ConditionTrue, karpv1.UnregisteredNoExecuteTaint),
		node("booting-e", corev1.ConditionFalse),
		node("starting-f", corev1.ConditionTrue, startup),
	} {
		if err := indexer.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	}
	p := &Plugin{
		capacity: &holds{held: map[types.UID]string{"uid-unnamed": "", "uid-launching": "launching-b", "uid-arrived": "up-c",
			"uid-unregistered": "joined-d", "uid-notready": "booting-e", "uid-startup": "starting-f"}},
		nodes: corelisters.NewNodeLister(indexer),
	}
	for _, tc := range []struct {
		pod   string
		gated bool
	}{
		{"free", false},
		{"unnamed", true},   // the cloud has not named its node yet
		{"launching", true}, // named, not in the cluster yet
		{"unregistered", true},
		{"notready", true},
		{"arrived", false}, // its node can take pods: the scheduler's own plugins decide
		{"startup", false}, // the same: TaintToleration says why it waits, node events wake it
	} {
		st := p.PreEnqueue(context.Background(), pod(tc.pod))
		if gated := !st.IsSuccess(); gated != tc.gated {
			t.Errorf("PreEnqueue(%s) = %v; gated %v, want %v", tc.pod, st, gated, tc.gated)
		}
		if tc.gated && (st.Code() != fwk.UnschedulableAndUnresolvable || st.Message() != waitsMessage) {
			t.Errorf("PreEnqueue(%s) = %v, want UnschedulableAndUnresolvable: %s", tc.pod, st, waitsMessage)
		}
	}
}
