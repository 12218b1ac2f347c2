package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/volume/persistentvolume"
	"k8s.io/utils/ptr"
)

// EBSProvisioner is the provisioner name the EBS CSI driver registers. StorageClasses written for
// EKS name it, so they apply to the sandbox unchanged and their claims are provisioned here.
const EBSProvisioner = "ebs.csi.aws.com"

// Annotations the PersistentVolume controller and the scheduler's VolumeBinding plugin use to
// hand a claim to its external provisioner (storage.kubernetes.io in k8s.io/component-helpers
// names them, but not as exported constants of a stable package).
const (
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annSelectedNode       = "volume.kubernetes.io/selected-node"
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
)

// StartVolumeControllers runs kube-controller-manager's PersistentVolume controller, which binds
// claims and hands dynamic ones to their provisioner, and a provisioner for EBSProvisioner that
// acts as the EBS CSI driver's external-provisioner does for a WaitForFirstConsumer class: once
// the scheduler has picked a node for a claim's pod, it creates a volume in that node's zone, with
// node affinity to the zone, and deletes it when a Delete-policy claim is released. That is what
// pins a StatefulSet's pods to their zones, as EBS does, for the scheduler and for Tailor's
// planner.
func StartVolumeControllers(ctx context.Context, kube kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactory(kube, 10*time.Minute)
	pvc, err := persistentvolume.NewController(ctx, persistentvolume.ControllerParameters{
		KubeClient:                kube,
		SyncPeriod:                15 * time.Second,
		VolumeInformer:            factory.Core().V1().PersistentVolumes(),
		ClaimInformer:             factory.Core().V1().PersistentVolumeClaims(),
		ClassInformer:             factory.Storage().V1().StorageClasses(),
		PodInformer:               factory.Core().V1().Pods(),
		NodeInformer:              factory.Core().V1().Nodes(),
		EnableDynamicProvisioning: true,
	})
	if err != nil {
		return fmt.Errorf("creating the PersistentVolume controller: %w", err)
	}
	p := &ebsProvisioner{kube: kube}
	claims := factory.Core().V1().PersistentVolumeClaims().Informer()
	if _, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.claim(ctx, o) },
		UpdateFunc: func(_, o any) { p.claim(ctx, o) },
	}); err != nil {
		return err
	}
	volumes := factory.Core().V1().PersistentVolumes().Informer()
	if _, err := volumes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.volume(ctx, o) },
		UpdateFunc: func(_, o any) { p.volume(ctx, o) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go pvc.Run(ctx)
	return nil
}

// ebsProvisioner provisions and deletes the volumes of EBSProvisioner's claims. Every write is
// idempotent (the volume's name is derived from the claim's UID), so a repeated event is harmless.
type ebsProvisioner struct {
	kube kubernetes.Interface
}

func (p *ebsProvisioner) claim(ctx context.Context, o any) {
	claim, ok := o.(*corev1.PersistentVolumeClaim)
	if !ok || claim.Spec.VolumeName != "" || claim.Annotations[annStorageProvisioner] != EBSProvisioner {
		return
	}
	nodeName := claim.Annotations[annSelectedNode]
	if nodeName == "" {
		return
	}
	go func() {
		if err := p.provision(ctx, claim, nodeName); err != nil {
			klog.FromContext(ctx).Error(err, "Provisioning a volume", "claim", klog.KObj(claim), "node", nodeName)
		}
	}()
}

func (p *ebsProvisioner) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim, nodeName string) error {
	node, err := p.kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the selected node: %w", err)
	}
	zone := node.Labels[corev1.LabelTopologyZone]
	if zone == "" {
		return fmt.Errorf("node %s has no %s label", nodeName, corev1.LabelTopologyZone)
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if claim.Spec.StorageClassName != nil {
		class, err := p.kube.StorageV1().StorageClasses().Get(ctx, *claim.Spec.StorageClassName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading StorageClass %s: %w", *claim.Spec.StorageClassName, err)
		}
		if class.ReclaimPolicy != nil {
			reclaim = *class.ReclaimPolicy
		}
	}
	name := "pvc-" + string(claim.UID)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: EBSProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              ptr.Deref(claim.Spec.StorageClassName, ""),
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: EBSProvisioner, VolumeHandle: "vol-" + string(claim.UID)[:17], FSType: "ext4"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
			}}}},
		},
	}
	// A write can race the API server coming up or a conflict; a short backoff covers both.
	return wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 6}, func(ctx context.Context) (bool, error) {
		_, err := p.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
}

// volume deletes a released volume this provisioner made, as the external-provisioner does for
// the Delete reclaim policy.
func (p *ebsProvisioner) volume(ctx context.Context, o any) {
	pv, ok := o.(*corev1.PersistentVolume)
	if !ok || pv.Annotations[annProvisionedBy] != EBSProvisioner || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return
	}
	go func() {
		err := p.kube.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Deleting a released volume", "volume", pv.Name)
		}
	}()
}
