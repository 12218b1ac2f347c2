package workload

import (
	"math/rand/v2"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// StorageClassName is the class generated volumes use: EBS through its CSI driver, provisioned
// where the scheduler first puts the pod (WaitForFirstConsumer), which is how EKS users set up
// gp3. The sandbox provisions it in that node's zone, and the pod is tied to the zone from then on.
const StorageClassName = "harness-gp3"

// ebsProvisioner is the EBS CSI driver's name (sandbox.EBSProvisioner; not imported, to keep
// this package free of the sandbox's dependencies).
const ebsProvisioner = "ebs.csi.aws.com"

// addVolume gives two StatefulSets in three a volume per pod, through a volumeClaimTemplate.
func (s *Scenario) addVolume(r *rand.Rand, st *appsv1.StatefulSet) {
	if r.IntN(3) == 0 {
		return
	}
	if len(s.StorageClasses) == 0 {
		s.StorageClasses = []*storagev1.StorageClass{{
			ObjectMeta:        metav1.ObjectMeta{Name: StorageClassName},
			Provisioner:       ebsProvisioner,
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
			ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
			Parameters:        map[string]string{"type": "gp3"},
		}}
	}
	size := []string{"1Gi", "10Gi", "100Gi"}[r.IntN(3)]
	st.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(StorageClassName),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}}
	c := &st.Spec.Template.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
}
