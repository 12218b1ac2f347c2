package termination

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// The wait for volumes to detach leaves out the volumes of the pods the drain does not wait for
// (one that tolerates karpenter.sh/disrupted, one stuck terminating), found through their claims,
// an ephemeral volume's generated claim among them, as Karpenter's termination does; the volumes
// of a pod still within its grace period, and of no pod at all, are waited for.
func TestAttachedVolumesLeaveOutThoseOfPodsTheDrainSkips(t *testing.T) {
	now := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	pod := func(name string, vol corev1.VolumeSource, mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "node-a", Volumes: []corev1.Volume{{Name: "data", VolumeSource: vol}}}}
		mod(p)
		return p
	}
	claimVol := func(claim string) corev1.VolumeSource {
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
	}
	pods := []*corev1.Pod{
		pod("tolerant", claimVol("claim-a"), func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
		}),
		pod("stuck", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}, func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-2 * time.Minute)}
		}),
		pod("leaving", claimVol("claim-c"), func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(10 * time.Second)}
		}),
	}
	pvcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for claim, pv := range map[string]string{"claim-a": "pv-a", "stuck-data": "pv-b", "claim-c": "pv-c"} {
		_ = pvcs.Add(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}})
	}
	vas := cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)
	for name, at := range map[string][2]string{"va-a": {"node-a", "pv-a"}, "va-b": {"node-a", "pv-b"}, "va-c": {"node-a", "pv-c"},
		"va-d": {"node-a", "pv-d"}, "va-e": {"node-b", "pv-e"}} {
		pv := at[1]
		_ = vas.Add(&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.VolumeAttachmentSpec{NodeName: at[0], Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}})
	}
	c := &Controller{opts: Options{Clock: clocktesting.NewFakeClock(now),
		VolumeAttachments: storagelisters.NewVolumeAttachmentLister(vas), PVCs: corelisters.NewPersistentVolumeClaimLister(pvcs)}}
	got := c.attachedVolumes("node-a", pods, now)
	slices.Sort(got)
	if want := []string{"va-c", "va-d"}; !slices.Equal(got, want) {
		t.Errorf("waiting for %v, want %v", got, want)
	}
	// Without a PVC lister every attachment of the node is waited for, as before.
	c.opts.PVCs = nil
	if got := c.attachedVolumes("node-a", pods, now); len(got) != 4 {
		t.Errorf("without PVCs: waiting for %v, want the node's four", got)
	}
}
