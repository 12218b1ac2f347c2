package provreq

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
)

// badInput is a request Tailor cannot build pods from: it fails at once, with a message that
// names the object and the field, rather than being retried.
type badInput struct{ msg string }

func (b *badInput) Error() string { return b.msg }

// podsOf returns the pods a request asks capacity for: for each pod set, Count pods shaped as its
// PodTemplate, in the request's namespace. Each carries the consume annotations its real
// counterparts will carry, and a controller reference to the request, so that it reads as one
// workload. A missing PodTemplate or a count below 1 is a *badInput; a lister error is returned
// as it is, to be retried.
//
// A template missing from the informer within templateLag of the request's creation is an error
// to retry, not a bad input: a template applied with its request may not have reached it yet.
func podsOf(req *autoscalingv1.ProvisioningRequest, templates corelisters.PodTemplateLister, now time.Time) ([]*corev1.Pod, error) {
	if len(req.Spec.PodSets) == 0 {
		return nil, &badInput{fmt.Sprintf("ProvisioningRequest %s/%s: spec.podSets is empty", req.Namespace, req.Name)}
	}
	var pods []*corev1.Pod
	for i, set := range req.Spec.PodSets {
		if set.Count <= 0 {
			return nil, &badInput{fmt.Sprintf("ProvisioningRequest %s/%s: spec.podSets[%d].count is %d; it must be at least 1",
				req.Namespace, req.Name, i, set.Count)}
		}
		name := set.PodTemplateRef.Name
		tmpl, err := templates.PodTemplates(req.Namespace).Get(name)
		if apierrors.IsNotFound(err) && name != "" && now.Sub(req.CreationTimestamp.Time) < templateLag {
			return nil, fmt.Errorf("PodTemplate %s/%s of ProvisioningRequest %s/%s is not in the informer yet", req.Namespace, name, req.Namespace, req.Name)
		}
		if apierrors.IsNotFound(err) || name == "" {
			return nil, &badInput{fmt.Sprintf("ProvisioningRequest %s/%s: spec.podSets[%d].podTemplateRef.name: PodTemplate %s/%s not found",
				req.Namespace, req.Name, i, req.Namespace, name)}
		}
		if err != nil {
			return nil, fmt.Errorf("reading PodTemplate %s/%s of ProvisioningRequest %s/%s: %w", req.Namespace, name, req.Namespace, req.Name, err)
		}
		for j := range int(set.Count) {
			pods = append(pods, podFrom(req, tmpl, i, j))
		}
	}
	return pods, nil
}

// podFrom is the j-th pod of pod set i. Its UID is derived from the request's, so the pods of one
// request are the same pods in every plan and every booking.
func podFrom(req *autoscalingv1.ProvisioningRequest, tmpl *corev1.PodTemplate, i, j int) *corev1.Pod {
	name := fmt.Sprintf("%s-%d-%d", req.Name, i, j)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   req.Namespace,
			UID:         types.UID(fmt.Sprintf("%s-%d-%d", req.UID, i, j)),
			Labels:      copyMap(tmpl.Template.Labels),
			Annotations: copyMap(tmpl.Template.Annotations),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: autoscalingv1.SchemeGroupVersion.String(), Kind: "ProvisioningRequest",
				Name: req.Name, UID: req.UID, Controller: ptr.To(true)}},
			CreationTimestamp: req.CreationTimestamp,
		},
		Spec: *tmpl.Template.Spec.DeepCopy(),
	}
	pod.Annotations[autoscalingv1.ConsumeAnnotationKey] = req.Name
	pod.Annotations[autoscalingv1.ClassAnnotationKey] = req.Spec.ProvisioningClassName
	return pod
}

func copyMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+2)
	for k, v := range in {
		out[k] = v
	}
	return out
}

// consumes returns the request a pod consumes (in its namespace), under either annotation key
// Cluster Autoscaler reads, or "".
func consumes(pod *corev1.Pod) string {
	if name := pod.Annotations[autoscalingv1.ConsumeAnnotationKey]; name != "" {
		return name
	}
	return pod.Annotations[autoscalingv1.DeprecatedConsumeAnnotationKey]
}

// templateLag is how long after a request's creation its missing PodTemplate is waited for.
const templateLag = 10 * time.Second
