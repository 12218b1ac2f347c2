package simulation

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// The objects given to NewOffline are what the plugins read: a pod whose claim is missing is
// refused in PreFilter, and passes once the claim and its StorageClass are there.
func TestNewOfflineServesObjects(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "wffc"}, Provisioner: "example.com/csi", VolumeBindingMode: &wffc}
	className := "wffc"
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &className, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
	}
	p := pod("p", "1")
	p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}

	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		refused string
	}{
		{"no claim", nil, `persistentvolumeclaim "data" not found`},
		{"claim and class", []runtime.Object{class, claim}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sim, err := NewOffline(ctx, "tailor", tc.objects...)
			if err != nil {
				t.Fatal(err)
			}
			sim.Use(schedcache.NewSnapshot(nil, []*corev1.Node{node("n", "4")}))
			_, _, status := sim.PreFilter(ctx, p)
			switch {
			case tc.refused == "" && status != nil:
				t.Errorf("PreFilter refused the pod: %v", status)
			case tc.refused != "" && (status == nil || !strings.Contains(status.Message(), tc.refused)):
				t.Errorf("PreFilter = %v, want a refusal containing %q", status, tc.refused)
			}
		})
	}
}

func TestNewOfflineStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewOffline(ctx, "tailor"); err == nil {
		t.Error("NewOffline with a cancelled context succeeded")
	}
}
