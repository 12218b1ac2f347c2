// Package webhook is Tailor's mutating admission webhook: it sets spec.schedulerName to Tailor's
// profile on the new pods of the namespaces that opt in, so their owners need not edit a manifest.
// Which pods it is asked about is decided by the MutatingWebhookConfiguration's namespaceSelector
// and objectSelector; the handler only refuses to take a pod from another scheduler.
package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Path is where the webhook is served; the MutatingWebhookConfiguration's service.path (or url)
// names it.
const Path = "/mutate-pods"

// maxReviewBytes bounds a request body: the API server sends the whole pod, and a pod is at most
// the API server's 3 MiB request limit plus the review around it.
const maxReviewBytes = 4 << 20

// Mutator answers AdmissionReviews for pods.
type Mutator struct {
	// SchedulerName is the scheduler profile new pods are given: Tailor's.
	SchedulerName string
}

// ServeHTTP decodes an admission.k8s.io/v1 AdmissionReview and answers it. Only a request that is
// no AdmissionReview gets an HTTP error; every review is answered allowed.
func (m Mutator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an admission.k8s.io/v1 AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("the body is not an admission.k8s.io/v1 AdmissionReview with a request (%v)", err), http.StatusBadRequest)
		return
	}
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: m.Admit(review.Request),
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		klog.FromContext(r.Context()).Error(err, "Writing the AdmissionReview response", "uid", review.Request.UID)
	}
}

// Admit answers one request: allowed always, since the webhook only mutates, with a JSON patch
// that sets the scheduler name when the pod is Tailor's to take.
func (m Mutator) Admit(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return resp
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		// Admitting it unchanged is what failurePolicy Ignore would do anyway.
		klog.Background().Error(err, "Admitting a pod unchanged: its object does not decode", "namespace", req.Namespace, "uid", req.UID)
		return resp
	}
	if !m.takes(&pod) {
		return resp
	}
	// "add" replaces a member that exists, so one operation covers both an empty and a defaulted
	// scheduler name.
	patch, _ := json.Marshal([]map[string]string{{"op": "add", "path": "/spec/schedulerName", "value": m.SchedulerName}})
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	return resp
}

// takes says whether the pod should be Tailor's. A pod that names another scheduler chose it; a
// pod created bound (spec.nodeName set: mirror pods, pods placed by hand) is seen by no
// scheduler; a DaemonSet's pod is pinned to its node, so Tailor can launch nothing for it, and
// leaving it to the default scheduler keeps nodes' agents running while Tailor is down.
func (m Mutator) takes(pod *corev1.Pod) bool {
	switch {
	case pod.Spec.SchedulerName == m.SchedulerName:
		return false
	case pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != corev1.DefaultSchedulerName:
		return false
	case pod.Spec.NodeName != "":
		return false
	case scheduling.IsDaemonSetPod(pod):
		return false
	}
	return true
}
