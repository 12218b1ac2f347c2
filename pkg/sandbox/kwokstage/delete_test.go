package kwokstage

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
)

// TestDeleteStages loads both rewritten stages beside each other, as the sandbox does, and checks
// which one kwok plays on a pod, and when.
func TestDeleteStages(t *testing.T) {
	var stages []*internalversion.Stage
	for _, rewrite := range []func(string) (string, error){DeleteOnce, FinishDeletion} {
		raw, err := rewrite(podfast.DefaultPodDelete)
		if err != nil {
			t.Fatal(err)
		}
		stage, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			t.Fatalf("the rewritten stage does not load: %v\n%s", err, raw)
		}
		stages = append(stages, stage)
	}
	lc, err := lifecycle.NewLifecycle(stages)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name  string
		meta  metav1.ObjectMeta
		stage string // "" when none plays
		delay time.Duration
	}{
		{"running", metav1.ObjectMeta{}, "", 0},
		{"being deleted with a grace period", metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: ptr.To[int64](30)}, "pod-delete", 0},
		{"being deleted at once", metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: ptr.To[int64](0)}, "pod-delete-unfinished", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: tc.meta}
			pod.Name, pod.Namespace = "p", "default"
			event := &lifecycle.Event{Data: pod}
			got, err := lc.Match(context.Background(), event)
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got != nil {
				name = got.Name()
			}
			if name != tc.stage {
				t.Fatalf("kwok plays %q, want %q", name, tc.stage)
			}
			if got == nil {
				return
			}
			delay, _, err := got.Delay(context.Background(), event, now.Time)
			if err != nil {
				t.Fatal(err)
			}
			if delay != tc.delay {
				t.Errorf("%s waits %v, want %v", name, delay, tc.delay)
			}
		})
	}
}

func TestRewritesRefuseAnotherShape(t *testing.T) {
	for name, rewrite := range map[string]func(string) (string, error){"DeleteOnce": DeleteOnce, "FinishDeletion": FinishDeletion} {
		if _, err := rewrite("kind: Stage\nmetadata:\n  name: something-else\n"); err == nil {
			t.Errorf("%s rewrote a stage it does not know", name)
		}
	}
}
