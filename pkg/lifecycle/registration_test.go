package lifecycle

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tailor-sh/tailor/pkg/controller"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A node write that conflicts is made again on the node as the API server has it, not on the
// informer's copy that conflicted: the kubelet wrote since, and the informer may stay behind for
// seconds. A node that keeps conflicting is left to the queue's backoff after nodeConflictRetry.Steps tries.
func TestANodeWriteThatConflictsIsMadeAgainOnTheLiveNode(t *testing.T) {
	live := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", ResourceVersion: "7"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/network-unavailable", Effect: corev1.TaintEffectNoSchedule}}}}
	stale := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", ResourceVersion: "5"}}
	kube := fake.NewClientset(live)
	var versions []string
	conflictsLeft := 1
	kube.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		var patch struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &patch); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, patch.Metadata.ResourceVersion)
		if conflictsLeft != 0 {
			conflictsLeft--
			return true, nil, apierrors.NewConflict(corev1.Resource("nodes"), "node-a", nil)
		}
		return true, live, nil
	})
	c := &Controller{opts: Options{Kube: kube}}
	var taintsWritten []corev1.Taint
	write := func(n *corev1.Node) error {
		taintsWritten = append([]corev1.Taint{}, n.Spec.Taints...)
		return c.patchNode(context.Background(), n, map[string]string{"registered": "true"}, taintsWritten, nil)
	}
	if err := controller.WriteLiveNode(context.Background(), kube, stale, nodeConflictRetry, write); err != nil {
		t.Fatalf("a write that conflicted once: %v", err)
	}
	if len(versions) != 2 || versions[0] != "5" || versions[1] != "7" {
		t.Errorf("the writes carried versions %v; want the informer's 5, then the live node's 7", versions)
	}
	if len(taintsWritten) != 1 {
		t.Errorf("the write again kept taints %v; want the live node's", taintsWritten)
	}

	// A patch that only merges labels overwrites nothing, and carries no version to conflict on.
	versions = nil
	if err := c.patchNode(context.Background(), stale, map[string]string{"initialized": "true"}, nil, nil); err != nil || len(versions) != 1 || versions[0] != "" {
		t.Errorf("a labels-only patch: %v, versions %v; want one patch without a version", err, versions)
	}

	versions, conflictsLeft = nil, -1 // conflicts for ever
	if err := controller.WriteLiveNode(context.Background(), kube, stale, nodeConflictRetry, write); !apierrors.IsConflict(err) {
		t.Errorf("a node that keeps conflicting: %v; want the conflict", err)
	}
	if len(versions) != nodeConflictRetry.Steps {
		t.Errorf("a node that keeps conflicting was written %d times; want %d", len(versions), nodeConflictRetry.Steps)
	}
}
