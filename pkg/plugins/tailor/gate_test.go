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
)

// A pod waiting for a node launched for it stays out of the queue until that node exists; a pod
// that waits for nothing, or whose node is there, goes in.
func TestPreEnqueueHoldsAPodUntilItsNodeExists(t *testing.T) {
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	if err := indexer.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "up-c"}}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	}
	p := &Plugin{
		capacity: &holds{held: map[types.UID]string{"uid-unnamed": "", "uid-launching": "launching-b", "uid-arrived": "up-c"}},
		nodes:    corelisters.NewNodeLister(indexer),
	}
	for _, tc := range []struct {
		pod   string
		gated bool
	}{
		{"free", false},
		{"unnamed", true},   // the cloud has not named its node yet
		{"launching", true}, // named, not in the cluster yet
		{"arrived", false},  // its node is there: the scheduler's own plugins decide
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
