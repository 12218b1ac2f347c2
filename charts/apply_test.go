package charts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// The rendered chart, CRDs first, is applied to a real API server that enforces RBAC and the
// restricted Pod Security Standard, which accepts every object without a warning; then the API
// server's own authorizer says what Tailor's ServiceAccount may and may not do.
func TestChartOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped in -short mode")
	}
	cp, err := sandbox.StartControlPlane(t, t.TempDir(), "--authorization-mode=RBAC")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	cfg := rest.CopyConfig(cp.Config)
	warnings := &warningRecorder{}
	cfg.WarningHandler = warnings
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()

	installChartCRDs(t, ctx, cfg)
	for _, rel := range []release{{label: "defaults", values: required}, custom} {
		r := render(t, rel)
		// Pod Security admission warns about a Deployment whose pods the namespace would refuse.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.release.namespace, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		skipped := apply(t, ctx, cfg, r.objects)
		for _, kind := range skipped {
			if !slices.Contains([]string{"ServiceMonitor", "Issuer", "Certificate"}, kind) {
				t.Errorf("%s was not applied: its API is not served", kind)
			}
		}
		t.Logf("%s: applied %d objects; not served here, so not applied: %v", rel.label, len(r.objects)-len(skipped), skipped)
	}
	if w := warnings.all(); len(w) > 0 {
		t.Errorf("the API server warned: %q", w)
	}

	sa := func(ns, name string) authorizationv1.SubjectAccessReviewSpec {
		return authorizationv1.SubjectAccessReviewSpec{User: fmt.Sprintf("system:serviceaccount:%s:%s", ns, name),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	}
	cases := []struct {
		spec  authorizationv1.SubjectAccessReviewSpec
		attrs authorizationv1.ResourceAttributes
		allow bool
	}{
		// What kube-scheduler does.
		{sa("tailor", "tailor"), attrs("list", "", "nodes", "", ""), true},
		{sa("tailor", "tailor"), attrs("watch", "", "pods", "", ""), true},
		{sa("tailor", "tailor"), attrs("create", "", "pods/binding", "default", ""), true},
		{sa("tailor", "tailor"), attrs("list", "storage.k8s.io", "csinodes", "", ""), true},
		{sa("tailor", "tailor"), attrs("update", "", "persistentvolumeclaims", "default", ""), true},
		{sa("tailor", "tailor"), attrs("create", "authorization.k8s.io", "subjectaccessreviews", "", ""), true},
		{sa("tailor", "tailor"), attrs("get", "", "configmaps", "kube-system", "extension-apiserver-authentication"), true},
		{sa("tailor", "tailor"), attrs("create", "coordination.k8s.io", "leases", "tailor", ""), true},
		{sa("tailor", "tailor"), attrs("update", "coordination.k8s.io", "leases", "tailor", "tailor"), true},
		{sa("tailor", "tailor"), attrs("create", "", "events", "tailor", ""), true},
		// What Tailor does beside it.
		{sa("tailor", "tailor"), attrs("create", "karpenter.sh", "nodeclaims", "", ""), true},
		{sa("tailor", "tailor"), attrs("update", "karpenter.sh", "nodeclaims/status", "", "default-abcde"), true},
		{sa("tailor", "tailor"), attrs("delete", "karpenter.sh", "nodeclaims", "", "default-abcde"), true},
		{sa("tailor", "tailor"), attrs("patch", "karpenter.sh", "nodepools", "", "default"), true},
		{sa("tailor", "tailor"), attrs("update", "karpenter.sh", "nodepools/status", "", "default"), true},
		{sa("tailor", "tailor"), attrs("get", "karpenter.k8s.aws", "ec2nodeclasses", "", "default"), true},
		{sa("tailor", "tailor"), attrs("update", "karpenter.k8s.aws", "ec2nodeclasses/status", "", "default"), true},
		{sa("tailor", "tailor"), attrs("patch", "", "nodes", "", "ip-10-0-1-1.ec2.internal"), true},
		{sa("tailor", "tailor"), attrs("delete", "", "nodes", "", "ip-10-0-1-1.ec2.internal"), true},
		{sa("tailor", "tailor"), attrs("create", "", "pods/eviction", "default", "inflate-1"), true},
		{sa("tailor", "tailor"), attrs("delete", "", "pods", "default", "inflate-1"), true},
		{sa("tailor", "tailor"), attrs("patch", "", "pods/status", "default", "inflate-1"), true},
		{sa("tailor", "tailor"), attrs("watch", "apps", "daemonsets", "", ""), true},
		{sa("tailor", "tailor"), attrs("list", "policy", "poddisruptionbudgets", "", ""), true},
		{sa("tailor", "tailor"), attrs("list", "storage.k8s.io", "volumeattachments", "", ""), true},
		{sa("tailor", "tailor"), attrs("get", "", "services", "kube-system", "kube-dns"), true},
		{sa("tailor", "tailor"), attrs("create", "events.k8s.io", "events", "default", ""), true},
		// The webhook, with its own certificate.
		{sa("tailor", "tailor"), attrs("patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "tailor"), true},
		{sa("tailor", "tailor"), attrs("create", "", "secrets", "tailor", ""), true},
		{sa("tailor", "tailor"), attrs("update", "", "secrets", "tailor", "tailor-webhook-cert"), true},
		// Nothing more.
		{sa("tailor", "tailor"), attrs("patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "another"), false},
		{sa("tailor", "tailor"), attrs("update", "", "secrets", "tailor", "another"), false},
		{sa("tailor", "tailor"), attrs("get", "", "secrets", "kube-system", "another"), false},
		{sa("tailor", "tailor"), attrs("update", "coordination.k8s.io", "leases", "tailor", "another"), false},
		{sa("tailor", "tailor"), attrs("update", "coordination.k8s.io", "leases", "kube-system", "tailor"), false},
		{sa("tailor", "tailor"), attrs("create", "karpenter.sh", "nodepools", "", ""), false},
		{sa("tailor", "tailor"), attrs("delete", "karpenter.k8s.aws", "ec2nodeclasses", "", "default"), false},
		{sa("tailor", "tailor"), attrs("create", "", "nodes", "", ""), false},
		{sa("tailor", "tailor"), attrs("create", "", "pods", "default", ""), false},
		{sa("tailor", "tailor"), attrs("create", "rbac.authorization.k8s.io", "clusterrolebindings", "", ""), false},
		// The custom release: its own Lease; cert-manager holds its certificate, so no Secrets
		// and no webhook configuration for Tailor.
		{sa("ops", "autoscaler-tailor"), attrs("update", "coordination.k8s.io", "leases", "ops", "autoscaler-tailor"), true},
		{sa("ops", "autoscaler-tailor"), attrs("create", "karpenter.sh", "nodeclaims", "", ""), true},
		{sa("ops", "autoscaler-tailor"), attrs("create", "", "secrets", "ops", ""), false},
		{sa("ops", "autoscaler-tailor"), attrs("patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "autoscaler-tailor"), false},
	}
	for _, tc := range cases {
		a := tc.attrs
		spec := tc.spec
		spec.ResourceAttributes = &a
		review, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != tc.allow {
			t.Errorf("%s may %s %s %s/%s in %q: %v, want %v (%s)", spec.User, a.Verb, a.Group, a.Resource, a.Name, a.Namespace,
				review.Status.Allowed, tc.allow, review.Status.Reason)
		}
	}
}

func attrs(verb, group, resource, namespace, name string) authorizationv1.ResourceAttributes {
	res, sub, _ := strings.Cut(resource, "/")
	return authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: res, Subresource: sub, Namespace: namespace, Name: name}
}

// installChartCRDs creates the chart's crds/, as `helm install` does before the templates, and
// waits until they are served.
func installChartCRDs(t *testing.T, ctx context.Context, cfg *rest.Config) {
	t.Helper()
	chrt, err := Chart()
	if err != nil {
		t.Fatal(err)
	}
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	for _, f := range chrt.CRDObjects() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(f.File.Data, crd); err != nil {
			t.Fatalf("%s: %v", f.Filename, err)
		}
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the API server refuses %s: %v", f.Filename, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s is not established: %v", crd.Name, err)
		}
	}
}

// apply server-side-applies objects in order and returns the kinds it skipped because the API
// server does not serve them (custom resources whose CRD is not installed).
func apply(t *testing.T, ctx context.Context, cfg *rest.Config, objects []*unstructured.Unstructured) (skipped []string) {
	t.Helper()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	dyn := dynamic.NewForConfigOrDie(cfg)
	for _, obj := range objects {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			mapper.Reset()
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if meta.IsNoMatchError(err) {
			skipped = append(skipped, gvk.Kind)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var res dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if obj.GetNamespace() == "" {
				t.Errorf("%s %s is namespaced but renders without a namespace", gvk.Kind, obj.GetName())
			}
			res = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		}
		if _, err := res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "helm", Force: true}); err != nil {
			t.Errorf("the API server refuses %s %s/%s: %v", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return skipped
}

// warningRecorder keeps the warnings the API server sends back.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}
