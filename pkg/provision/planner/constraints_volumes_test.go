package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

const ebs = "ebs.csi.aws.com"

func storageClass(name string, mode storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: ebs, VolumeBindingMode: &mode}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: zones}}}}
	}
	return sc
}

func claim(name, class string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
	}
}

// boundPair is a claim bound to a volume; the volume is pinned to zone by node affinity, or by
// its zone label when byLabel (what the VolumeZone plugin reads).
func boundPair(name, zone string, byLabel bool) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	pvc := claim(name, "", corev1.ReadWriteOnce)
	pvc.Spec.VolumeName = "pv-" + name
	pvc.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	pvc.Status.Phase = corev1.ClaimBound
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: ebs, VolumeHandle: "vol-" + name}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	if byLabel {
		pv.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	} else {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{match(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone)}}}}}
	}
	return pv, pvc
}

func mounting(claims ...string) podOpt {
	return func(p *corev1.Pod) {
		for _, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		}
	}
}

// TestConstraintVolumeTopology: pods with persistent volumes get claims only where their volumes
// can be reached, as VolumeBinding, VolumeZone and VolumeRestrictions judge over the PVCs, PVs and
// StorageClasses the simulator's informers serve.
func TestConstraintVolumeTopology(t *testing.T) {
	pvB, pvcB := boundPair("data-b", fake.ZoneB, false)
	pvC, pvcC := boundPair("data-c", fake.ZoneC, true)
	objects := []runtime.Object{pvB, pvcB, pvC, pvcC,
		storageClass("wffc", storagev1.VolumeBindingWaitForFirstConsumer),
		storageClass("wffc-zone-a", storagev1.VolumeBindingWaitForFirstConsumer, fake.ZoneA),
		storageClass("immediate", storagev1.VolumeBindingImmediate),
		claim("new-anywhere", "wffc", corev1.ReadWriteOnce),
		claim("new-in-a", "wffc-zone-a", corev1.ReadWriteOnce),
		claim("new-immediate", "immediate", corev1.ReadWriteOnce),
		claim("single-writer", "wffc", corev1.ReadWriteOncePod),
	}
	s := offlineSim(t, nil, objects...)
	inZone := func(zones ...string) func(*cloud.InstanceType, cloud.Offering) bool {
		return func(_ *cloud.InstanceType, o cloud.Offering) bool { return slices.Contains(zones, o.Zone) }
	}
	cases := []struct {
		name    string
		pending []*corev1.Pod
		// keep is what the options of the one claim must be (every offering that holds the pods
		// and that keep allows); nil when refused.
		keep func(*cloud.InstanceType, cloud.Offering) bool
		// refused maps the pods left unplaceable to what their reason must say.
		refused map[string]string
		skip    string
	}{
		{name: "bound volume with node affinity", pending: []*corev1.Pod{newPod("p", "1", "2Gi", mounting("data-b"))}, keep: inZone(fake.ZoneB)},
		{name: "bound volume with a zone label", pending: []*corev1.Pod{newPod("p", "1", "2Gi", mounting("data-c"))}, keep: inZone(fake.ZoneC)},
		{name: "WaitForFirstConsumer, allowed in one zone", pending: []*corev1.Pod{newPod("p", "1", "2Gi", mounting("new-in-a"))}, keep: inZone(fake.ZoneA)},
		{name: "WaitForFirstConsumer, anywhere", pending: []*corev1.Pod{newPod("p", "1", "2Gi", mounting("new-anywhere"))}, keep: anyOffering},
		// Two pods of one StatefulSet-like app share the claim of one of them: both go where it is.
		{name: "two pods, one bound volume", pending: []*corev1.Pod{newPod("p", "1", "2Gi", mounting("data-b")), newPod("q", "1", "2Gi", mounting("data-b"))},
			keep: inZone(fake.ZoneB)},
		{name: "volumes in two zones", pending: []*corev1.Pod{newPod("p", "1", "2Gi", mounting("data-b", "data-c"))},
			refused: map[string]string{"p": "didn't match PersistentVolume's node affinity"}},
		{name: "immediate claim not bound yet", pending: []*corev1.Pod{newPod("p", "1", "2Gi", mounting("new-immediate"))},
			refused: map[string]string{"p": "unbound immediate PersistentVolumeClaims"}},
		{name: "claim missing", pending: []*corev1.Pod{newPod("p", "1", "2Gi", mounting("nowhere"))},
			refused: map[string]string{"p": `persistentvolumeclaim "nowhere" not found`}},
		// ReadWriteOncePod: the second pod may not use the claim the first was planned with.
		{name: "ReadWriteOncePod claim for two pods", pending: []*corev1.Pod{newPod("p", "2", "2Gi", mounting("single-writer")), newPod("q", "1", "2Gi", mounting("single-writer"))},
			keep: anyOffering, refused: map[string]string{"q": "ReadWriteOncePod"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			knownBug(t, tc.skip)
			in := Input{Pending: tc.pending, Pools: []Pool{newPool("default")}}
			plan := NewPlanner(s).Plan(context.Background(), in)
			var placed []*corev1.Pod
			for _, p := range tc.pending {
				if why, ok := tc.refused[p.Name]; ok {
					reasonContains(t, plan, p, why)
				} else {
					placed = append(placed, p)
				}
			}
			if len(plan.Unplaceable) != len(tc.refused) {
				t.Fatalf("want %d pods unplaceable; got %s", len(tc.refused), summary(plan))
			}
			if tc.keep == nil {
				if len(plan.Claims) != 0 {
					t.Fatalf("want no claim; got %s", summary(plan))
				}
				return
			}
			pc := onlyClaim(t, &Plan{Claims: plan.Claims}, placed...)
			sameOptions(t, pc, placed, tc.keep)
			verifyPlan(t, s, in, plan)
		})
	}
}

// offlineSim is a simulator over objects, as NewOffline builds one, with the default profile
// changed by edit first (nil: unchanged). Its informers stop when the test ends.
func offlineSim(t *testing.T, edit func(*config.KubeSchedulerProfile), objects ...runtime.Object) *simulation.Simulator {
	t.Helper()
	if edit == nil {
		s, err := simulation.NewOffline(t.Context(), "tailor", objects...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	profile, err := simulation.DefaultProfile("tailor")
	if err != nil {
		t.Fatal(err)
	}
	edit(profile)
	client := kubefake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	s, err := simulation.New(t.Context(), profile, simulation.Deps{Client: client, InformerFactory: factory})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(t.Context().Done())
	for typ, ok := range factory.WaitForCacheSync(t.Context().Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return s
}

// TestVolumeReplicasSpreadSettleTheirZones: a StatefulSet's replicas, each with a claim of its own
// waiting for its first consumer, spread over zones and one to a node. Their volumes make the plan
// weigh them per offering; their claims must still settle into one zone each, or every replica
// is counted in no zone and the cloud may launch them all in one (harness seed 1545).
func TestVolumeReplicasSpreadSettleTheirZones(t *testing.T) {
	const app = "db"
	objects := []runtime.Object{storageClass("wffc", storagev1.VolumeBindingWaitForFirstConsumer)}
	pending := replicas(6, app, "1", "2Gi", awayFrom(app), spread(app, corev1.LabelTopologyZone, 1, corev1.DoNotSchedule))
	for i, p := range pending {
		name := fmt.Sprintf("data-%s-%d", app, i)
		objects = append(objects, claim(name, "wffc", corev1.ReadWriteOnce))
		mounting(name)(p)
	}
	s := offlineSim(t, nil, objects...)
	in := Input{Pending: pending, Pools: []Pool{newPool("default")}}
	plan := NewPlanner(s).Plan(context.Background(), in)
	if len(plan.Unplaceable) != 0 || len(plan.Claims) != len(pending) {
		t.Fatalf("want a claim per replica; got %s", summary(plan))
	}
	want := map[string]int{fake.ZoneA: 2, fake.ZoneB: 2, fake.ZoneC: 2}
	if got := podsPerDomain(t, plan, corev1.LabelTopologyZone); !maps.Equal(got, want) {
		t.Errorf("replicas per zone %v, want %v", got, want)
	}
	verifyPlan(t, s, in, plan)
}
