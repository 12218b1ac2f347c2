package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8sappsv1 "k8s.io/kubernetes/pkg/apis/apps/v1"
	k8sbatchv1 "k8s.io/kubernetes/pkg/apis/batch/v1"
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Manifests are the objects a plan reads, typed and defaulted as the API server would store
// them, with workloads expanded into the pods their controllers would create.
type Manifests struct {
	NodePools []*karpv1.NodePool
	// NodeClasses are accepted so that a folder written for Karpenter loads; the simulated
	// catalog does not depend on them.
	NodeClasses []*awsv1.EC2NodeClass
	// DaemonSets run a pod on every new node that their pods' Filters pass on; the planner
	// counts those pods' requests on each NodeClaim.
	DaemonSets []*appsv1.DaemonSet
	// Nodes are existing nodes; pods bound to them count on them.
	Nodes []*corev1.Node
	// Pods are the pods written as such and those the workloads would make, bound or not.
	Pods []*corev1.Pod
	// Volumes are the objects the scheduler's plugins read besides nodes and pods: Namespaces,
	// PersistentVolumeClaims (including those a StatefulSet's volumeClaimTemplates would make),
	// PersistentVolumes, StorageClasses, CSINodes and CSIDrivers.
	Volumes []runtime.Object
	// Skipped are objects of kinds a plan does not read.
	Skipped []SkippedObject
	// Warnings are what the manifests lack for their pods to be planned as in a cluster.
	Warnings []string
}

// SkippedObject is an object a plan read but does not use.
type SkippedObject struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// scheme decodes every object a plan may meet: Kubernetes' own kinds and Tailor's.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// Load reads manifest files (YAML or JSON, any number of documents each, kind List included).
// An object that does not decode strictly into its kind (an unknown field, a wrong type, no kind)
// is an error naming its file and document.
func Load(files []string) (*Manifests, error) {
	m := &Manifests{}
	for _, file := range files {
		if err := m.loadFile(file); err != nil {
			return nil, err
		}
	}
	m.classifyClaims()
	return m, nil
}

// classifyClaims gives PersistentVolumeClaims without a StorageClass the default one, as the
// API server's DefaultStorageClass admission does, and warns about claims whose class is not in
// the manifests: the VolumeBinding plugin refuses their pods.
func (m *Manifests) classifyClaims() {
	classes := map[string]bool{}
	var def string
	for _, o := range m.Volumes {
		if sc, ok := o.(*storagev1.StorageClass); ok {
			classes[sc.Name] = true
			if sc.Annotations[defaultClassAnnotation] == "true" {
				def = sc.Name
			}
		}
	}
	for _, o := range m.Volumes {
		pvc, ok := o.(*corev1.PersistentVolumeClaim)
		if !ok || pvc.Spec.VolumeName != "" {
			continue
		}
		switch {
		case pvc.Spec.StorageClassName == nil && def != "":
			pvc.Spec.StorageClassName = &def
		case pvc.Spec.StorageClassName == nil:
			m.Warnings = append(m.Warnings, fmt.Sprintf("PersistentVolumeClaim %s/%s names no StorageClass and the manifests have no default one: it stays unbound and its pods cannot be planned", pvc.Namespace, pvc.Name))
		case *pvc.Spec.StorageClassName != "" && !classes[*pvc.Spec.StorageClassName]:
			m.Warnings = append(m.Warnings, fmt.Sprintf("PersistentVolumeClaim %s/%s names StorageClass %s, which is not in the manifests: add it with -f for its pods to be planned", pvc.Namespace, pvc.Name, *pvc.Spec.StorageClassName))
		}
	}
}

// defaultClassAnnotation marks the StorageClass that claims naming none get.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

func (m *Manifests) loadFile(file string) error {
	r, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only: nothing to lose on close
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for doc := 1; ; doc++ {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return nil
		}
		source := file + ", document " + strconv.Itoa(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := m.add(u, source); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
	}
}

func (m *Manifests) add(u *unstructured.Unstructured, source string) error {
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return fmt.Errorf("apiVersion and kind are required")
	}
	if u.IsList() {
		return u.EachListItem(func(item runtime.Object) error {
			return m.add(item.(*unstructured.Unstructured), source)
		})
	}
	gvk := u.GroupVersionKind()
	name := u.GetName()
	if !scheme.Recognizes(gvk) {
		m.Skipped = append(m.Skipped, SkippedObject{Kind: gvk.Kind, Name: name, Source: source, Reason: "kind unknown to the plan"})
		return nil
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		return fmt.Errorf("%s %q: %w", gvk.Kind, name, err)
	}
	if name == "" {
		return fmt.Errorf("%s: metadata.name is required", gvk.Kind)
	}
	if meta, ok := obj.(metav1.Object); ok && namespaced(obj) && meta.GetNamespace() == "" {
		meta.SetNamespace(metav1.NamespaceDefault)
	}
	switch o := obj.(type) {
	case *karpv1.NodePool:
		m.NodePools = append(m.NodePools, o)
	case *awsv1.EC2NodeClass:
		m.NodeClasses = append(m.NodeClasses, o)
	case *corev1.Node:
		k8scorev1.SetObjectDefaults_Node(o)
		m.Nodes = append(m.Nodes, o)
	case *corev1.Pod:
		k8scorev1.SetObjectDefaults_Pod(o)
		if o.UID == "" {
			o.UID = uid("Pod", o.Namespace, o.Name)
		}
		m.Pods = append(m.Pods, o)
	case *appsv1.Deployment:
		k8sappsv1.SetObjectDefaults_Deployment(o)
		m.addReplicas(o.ObjectMeta, "Deployment", *o.Spec.Replicas, o.Spec.Template, true)
	case *appsv1.ReplicaSet:
		k8sappsv1.SetObjectDefaults_ReplicaSet(o)
		m.addReplicas(o.ObjectMeta, "ReplicaSet", *o.Spec.Replicas, o.Spec.Template, false)
	case *appsv1.StatefulSet:
		k8sappsv1.SetObjectDefaults_StatefulSet(o)
		m.addStatefulSet(o)
	case *appsv1.DaemonSet:
		k8sappsv1.SetObjectDefaults_DaemonSet(o)
		if o.UID == "" {
			o.UID = uid("DaemonSet", o.Namespace, o.Name)
		}
		m.DaemonSets = append(m.DaemonSets, o)
	case *batchv1.Job:
		k8sbatchv1.SetObjectDefaults_Job(o)
		m.addJob(o)
	case *corev1.Namespace:
		k8scorev1.SetObjectDefaults_Namespace(o)
		m.Volumes = append(m.Volumes, o)
	case *corev1.PersistentVolumeClaim:
		k8scorev1.SetObjectDefaults_PersistentVolumeClaim(o)
		m.Volumes = append(m.Volumes, o)
	case *corev1.PersistentVolume:
		k8scorev1.SetObjectDefaults_PersistentVolume(o)
		m.Volumes = append(m.Volumes, o)
	case *storagev1.StorageClass, *storagev1.CSINode, *storagev1.CSIDriver:
		m.Volumes = append(m.Volumes, o)
	default:
		reason := "kind not read by the plan"
		if gvk.Kind == "CronJob" {
			reason = "a CronJob makes pods only on its schedule; plan its Job instead"
		}
		m.Skipped = append(m.Skipped, SkippedObject{Kind: gvk.Kind, Name: qualified(obj), Source: source, Reason: reason})
	}
	return nil
}

// addReplicas adds the pods a ReplicaSet (or the ReplicaSet of a Deployment) would create. Like
// the Deployment controller, it labels them with a pod-template-hash, so that topology spread's
// matchLabelKeys tells the pods of different templates apart.
func (m *Manifests) addReplicas(owner metav1.ObjectMeta, kind string, replicas int32, tmpl corev1.PodTemplateSpec, hashed bool) {
	rsName := owner.Name
	if hashed {
		hash := templateHash(tmpl)
		rsName = owner.Name + "-" + hash
		tmpl.Labels = withLabel(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	}
	for i := range replicas {
		pod := podFrom(tmpl, owner.Namespace, fmt.Sprintf("%s-%d", rsName, i), kind+"/"+owner.Name)
		pod.OwnerReferences = controlledBy("apps/v1", "ReplicaSet", rsName)
		m.Pods = append(m.Pods, pod)
	}
}

// addStatefulSet adds the pods a StatefulSet would create, ordinal names and stable labels, and
// the PersistentVolumeClaims of its volumeClaimTemplates, bound into each pod as the controller
// binds them.
func (m *Manifests) addStatefulSet(s *appsv1.StatefulSet) {
	for i := range *s.Spec.Replicas {
		name := fmt.Sprintf("%s-%d", s.Name, i)
		tmpl := *s.Spec.Template.DeepCopy()
		tmpl.Labels = withLabel(tmpl.Labels, appsv1.StatefulSetPodNameLabel, name)
		tmpl.Labels = withLabel(tmpl.Labels, appsv1.PodIndexLabel, strconv.Itoa(int(i)))
		pod := podFrom(tmpl, s.Namespace, name, "StatefulSet/"+s.Name)
		pod.OwnerReferences = controlledBy("apps/v1", "StatefulSet", s.Name)
		pod.Spec.Hostname, pod.Spec.Subdomain = name, s.Spec.ServiceName
		for _, vct := range s.Spec.VolumeClaimTemplates {
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: vct.Name + "-" + name, Namespace: s.Namespace, Labels: vct.Labels, Annotations: vct.Annotations},
				Spec:       *vct.Spec.DeepCopy(),
			}
			k8scorev1.SetObjectDefaults_PersistentVolumeClaim(pvc)
			m.Volumes = append(m.Volumes, pvc)
			source := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}
			replaced := false
			for j := range pod.Spec.Volumes {
				if pod.Spec.Volumes[j].Name == vct.Name {
					pod.Spec.Volumes[j].VolumeSource, replaced = source, true
				}
			}
			if !replaced {
				pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: source})
			}
		}
		m.Pods = append(m.Pods, pod)
	}
}

// addJob adds the pods a Job runs at once: its parallelism, or fewer when it has fewer
// completions to go; none while it is suspended.
func (m *Manifests) addJob(j *batchv1.Job) {
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return
	}
	n := *j.Spec.Parallelism
	if j.Spec.Completions != nil && *j.Spec.Completions < n {
		n = *j.Spec.Completions
	}
	tmpl := *j.Spec.Template.DeepCopy()
	tmpl.Labels = withLabel(tmpl.Labels, batchv1.JobNameLabel, j.Name)
	tmpl.Labels = withLabel(tmpl.Labels, "job-name", j.Name) // the legacy label, which the Job controller still sets
	for i := range n {
		pod := podFrom(tmpl, j.Namespace, fmt.Sprintf("%s-%d", j.Name, i), "Job/"+j.Name)
		pod.OwnerReferences = controlledBy("batch/v1", "Job", j.Name)
		m.Pods = append(m.Pods, pod)
	}
}

// podFrom is the pod a controller makes from tmpl, defaulted as the API server defaults a pod
// (which does more than defaulting a template does: requests from limits, for one).
func podFrom(tmpl corev1.PodTemplateSpec, namespace, name, owner string) *corev1.Pod {
	t := tmpl.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   namespace,
			UID:         uid(owner, namespace, name),
			Labels:      t.Labels,
			Annotations: t.Annotations,
		},
		Spec: t.Spec,
	}
	k8scorev1.SetObjectDefaults_Pod(pod)
	return pod
}

func controlledBy(apiVersion, kind, name string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid(kind, "", name), Controller: &yes, BlockOwnerDeletion: &yes}}
}

// uid is a stable stand-in for the UID the API server would assign, so that plans (which break
// ties by UID) are the same from run to run.
func uid(parts ...string) types.UID {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return types.UID(fmt.Sprintf("plan-%016x", h.Sum64()))
}

// templateHash stands in for the Deployment controller's pod-template-hash: a short, stable,
// DNS-safe digest of the template.
func templateHash(tmpl corev1.PodTemplateSpec) string {
	data, _ := json.Marshal(tmpl)
	h := fnv.New32a()
	_, _ = h.Write(data)
	return utilrand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

func withLabel(labels map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[key] = value
	return out
}

// namespaced reports whether obj is of one of the namespaced kinds a plan reads: those get the
// default namespace when they name none, as kubectl would give them.
func namespaced(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.StatefulSet, *appsv1.DaemonSet, *batchv1.Job, *corev1.PersistentVolumeClaim:
		return true
	}
	return false
}

func qualified(obj runtime.Object) string {
	meta, ok := obj.(metav1.Object)
	if !ok {
		return ""
	}
	if meta.GetNamespace() == "" {
		return meta.GetName()
	}
	return meta.GetNamespace() + "/" + meta.GetName()
}
