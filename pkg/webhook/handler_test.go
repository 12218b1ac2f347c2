package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

var podKind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}

func podRequest(op admissionv1.Operation, mutate func(*corev1.Pod)) *admissionv1.AdmissionRequest {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec:       corev1.PodSpec{SchedulerName: corev1.DefaultSchedulerName, Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
	if mutate != nil {
		mutate(pod)
	}
	raw, _ := json.Marshal(pod)
	return &admissionv1.AdmissionRequest{UID: "uid-1", Kind: podKind, Namespace: "shop", Operation: op, Object: runtime.RawExtension{Raw: raw}}
}

// The handler sets the scheduler name on new pods that would go to the default scheduler, leaves
// every other request alone, and answers every one allowed.
func TestAdmit(t *testing.T) {
	m := Mutator{SchedulerName: "tailor"}
	for _, tc := range []struct {
		name string
		req  *admissionv1.AdmissionRequest
		// want is the pod's scheduler name after the patch; "" means no patch at all.
		want string
	}{
		{name: "defaulted to default-scheduler", req: podRequest(admissionv1.Create, nil), want: "tailor"},
		{name: "no scheduler name", req: podRequest(admissionv1.Create, func(p *corev1.Pod) { p.Spec.SchedulerName = "" }), want: "tailor"},
		{name: "already tailor", req: podRequest(admissionv1.Create, func(p *corev1.Pod) { p.Spec.SchedulerName = "tailor" })},
		{name: "another scheduler", req: podRequest(admissionv1.Create, func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" })},
		{name: "created bound to a node", req: podRequest(admissionv1.Create, func(p *corev1.Pod) { p.Spec.NodeName = "n1" })},
		{name: "a DaemonSet's pod", req: podRequest(admissionv1.Create, func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "d1", Controller: ptr.To(true)}}
		})},
		{name: "a ReplicaSet's pod", req: podRequest(admissionv1.Create, func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "r1", Controller: ptr.To(true)}}
		}), want: "tailor"},
		{name: "an update", req: podRequest(admissionv1.Update, nil)},
		{name: "a subresource", req: func() *admissionv1.AdmissionRequest {
			r := podRequest(admissionv1.Create, nil)
			r.SubResource = "binding"
			return r
		}()},
		{name: "not a pod", req: func() *admissionv1.AdmissionRequest {
			r := podRequest(admissionv1.Create, nil)
			r.Kind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
			return r
		}()},
		{name: "an object that does not decode", req: func() *admissionv1.AdmissionRequest {
			r := podRequest(admissionv1.Create, nil)
			r.Object.Raw = []byte(`{"spec": 7}`)
			return r
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := m.Admit(tc.req)
			if !resp.Allowed || resp.UID != tc.req.UID {
				t.Fatalf("response %+v: want allowed, for uid %s", resp, tc.req.UID)
			}
			if tc.want == "" {
				if resp.Patch != nil || resp.PatchType != nil {
					t.Fatalf("patched %s; want no patch", resp.Patch)
				}
				return
			}
			if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Fatalf("patch type %v; want JSONPatch", resp.PatchType)
			}
			if got := applied(t, tc.req.Object.Raw, resp.Patch); got.Spec.SchedulerName != tc.want {
				t.Fatalf("schedulerName after the patch %q; want %q", got.Spec.SchedulerName, tc.want)
			}
		})
	}
}

// applied applies the patch the way the API server's mutating dispatcher does.
func applied(t *testing.T, raw, patch []byte) *corev1.Pod {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decoding patch %s: %v", patch, err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("applying patch %s: %v", patch, err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(out, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}

// Over HTTP: a review in, a review of the same version out; anything else is a 4xx.
func TestServeHTTP(t *testing.T) {
	srv := httptest.NewServer(Mutator{SchedulerName: "tailor"})
	defer srv.Close()
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  podRequest(admissionv1.Create, nil),
	})
	resp, err := http.Post(srv.URL+Path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil || out.Response.UID != "uid-1" || !out.Response.Allowed || len(out.Response.Patch) == 0 {
		t.Fatalf("response %+v; want an allowed admission.k8s.io/v1 AdmissionReview for uid-1 with a patch", out)
	}

	for name, req := range map[string]func() (*http.Response, error){
		"not a review": func() (*http.Response, error) {
			return http.Post(srv.URL+Path, "application/json", bytes.NewReader([]byte(`{"kind":"Pod"}`)))
		},
		"a GET": func() (*http.Response, error) { return http.Get(srv.URL + Path) },
	} {
		resp, err := req()
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s: status %d; want a 4xx", name, resp.StatusCode)
		}
	}
}
