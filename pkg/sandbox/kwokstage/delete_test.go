package kwokstage

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
)

func TestDeleteOnceSkipsPodsTheAPIServerRemoves(t *testing.T) {
	raw, err := DeleteOnce(podfast.DefaultPodDelete)
	if err != nil {
		t.Fatal(err)
	}
	stage, err := config.UnmarshalWithType[*internalversion.Stage](raw)
	if err != nil {
		t.Fatalf("the rewritten stage does not load: %v", err)
	}
	lc, err := lifecycle.NewLifecycle([]*internalversion.Stage{stage})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name  string
		meta  metav1.ObjectMeta
		plays bool
	}{
		{"running", metav1.ObjectMeta{}, false},
		{"being deleted with a grace period", metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: ptr.To[int64](30)}, true},
		{"being deleted at once", metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: ptr.To[int64](0)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: tc.meta}
			pod.Name, pod.Namespace = "p", "default"
			got, err := lc.Match(context.Background(), &lifecycle.Event{Data: pod})
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tc.plays {
				t.Errorf("pod-delete plays: %v, want %v", got != nil, tc.plays)
			}
		})
	}
}
