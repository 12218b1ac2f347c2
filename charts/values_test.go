package charts

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
)

// custom sets a value of nearly every kind to something other than its default, in a release
// whose name and namespace differ from the chart's.
var custom = release{label: "custom", name: "autoscaler", namespace: "ops", values: required + `
  interruptionQueue: prod-east-interruptions
  awsRegion: us-east-1
  pluginArgs:
    batchIdleDuration: 100ms
    minValuesPolicy: BestEffort
replicas: 3
logLevel: 4
featureGates: {GenericWorkload: true, GangScheduling: true}
image:
  repository: registry.example.com/platform/tailor-scheduler
  tag: v0.1.0-rc.1
  digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
serviceAccount:
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/TailorController
serviceMonitor:
  enabled: true
  additionalLabels: {release: kube-prometheus}
  endpointConfig: {interval: 15s}
webhook:
  namespaceSelector:
    matchLabels: null # Helm merges maps with the chart's; null drops the default label
    matchExpressions:
      - {key: team, operator: In, values: [payments, search]}
  objectSelector:
    matchLabels: {scheduling.tailor.sh/opt-in: "true"}
  timeoutSeconds: 5
  certManager:
    enabled: true
nodeSelector: {node-role.example.com/system: "true"}
tolerations: [{key: dedicated, operator: Equal, value: system, effect: NoSchedule}]
`}

func TestNonDefaultValues(t *testing.T) {
	r := render(t, custom)
	if r.fullname() != "autoscaler-tailor" {
		t.Fatalf("fullname %s", r.fullname())
	}
	dep := deployment(t, r)
	c := dep.Spec.Template.Spec.Containers[0]
	if *dep.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", *dep.Spec.Replicas)
	}
	for _, arg := range []string{
		"--v=4", "--interruption-queue=prod-east-interruptions", "--aws-region=us-east-1",
		"--webhook-service=autoscaler-tailor", "--webhook-namespace=ops", "--webhook-configuration=autoscaler-tailor",
		"--webhook-cert-dir=/etc/tailor/webhook-certs", "--feature-gates=GangScheduling=true,GenericWorkload=true",
	} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %q lack %s", c.Args, arg)
		}
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--webhook-cert-secret") }) {
		t.Errorf("with cert-manager Tailor must not manage its own certificate: %q", c.Args)
	}
	ref, err := reference.Parse(c.Image)
	if err != nil {
		t.Fatalf("image %s: %v", c.Image, err)
	}
	if tagged, ok := ref.(reference.NamedTagged); !ok || tagged.Tag() != "v0.1.0-rc.1" {
		t.Errorf("image %s: want tag v0.1.0-rc.1", c.Image)
	}
	if digested, ok := ref.(reference.Digested); !ok || !strings.HasPrefix(digested.Digest().String(), "sha256:0123") {
		t.Errorf("image %s: want the digest", c.Image)
	}
	if !reflect.DeepEqual(dep.Spec.Template.Spec.NodeSelector, map[string]string{"kubernetes.io/os": "linux", "node-role.example.com/system": "true"}) {
		t.Errorf("nodeSelector %v", dep.Spec.Template.Spec.NodeSelector)
	}
	if tol := dep.Spec.Template.Spec.Tolerations; len(tol) != 1 || tol[0].Key != "dedicated" {
		t.Errorf("tolerations %+v", tol)
	}
	// cert-manager's Secret is mounted where --webhook-cert-dir points.
	if !hasSecretMount(dep.Spec.Template.Spec, c, "autoscaler-tailor-webhook-cert", "/etc/tailor/webhook-certs") {
		t.Errorf("the webhook certificate Secret is not mounted at /etc/tailor/webhook-certs: %+v %+v", dep.Spec.Template.Spec.Volumes, c.VolumeMounts)
	}
	certificate := r.find(t, "Certificate", "autoscaler-tailor-webhook")
	if s, _, _ := unstructured.NestedString(certificate.Object, "spec", "secretName"); s != "autoscaler-tailor-webhook-cert" {
		t.Errorf("Certificate secretName %q", s)
	}
	dns, _, _ := unstructured.NestedStringSlice(certificate.Object, "spec", "dnsNames")
	if !slices.Contains(dns, "autoscaler-tailor.ops.svc") {
		t.Errorf("Certificate dnsNames %v lack the Service's name", dns)
	}
	if issuer, _, _ := unstructured.NestedString(certificate.Object, "spec", "issuerRef", "name"); r.lookup("Issuer", issuer) == nil {
		t.Errorf("the Certificate's issuer %q is not rendered", issuer)
	}
	if got := r.find(t, "MutatingWebhookConfiguration", "autoscaler-tailor").GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "ops/autoscaler-tailor-webhook" {
		t.Errorf("cert-manager.io/inject-ca-from %q, want ops/autoscaler-tailor-webhook", got)
	}

	hook := webhook(t, r)
	wantNamespaces := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"payments", "search"}},
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "ops"}},
	}}
	if !reflect.DeepEqual(hook.NamespaceSelector, wantNamespaces) {
		t.Errorf("namespaceSelector %+v, want the user's plus the exclusion of kube-system and ops", hook.NamespaceSelector)
	}
	if !reflect.DeepEqual(hook.ObjectSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"scheduling.tailor.sh/opt-in": "true"}}) {
		t.Errorf("objectSelector %+v", hook.ObjectSelector)
	}
	if *hook.TimeoutSeconds != 5 {
		t.Errorf("timeoutSeconds %d, want 5", *hook.TimeoutSeconds)
	}

	if got := r.find(t, "ServiceAccount", "autoscaler-tailor").GetAnnotations(); got["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/TailorController" {
		t.Errorf("ServiceAccount annotations %v lack the IRSA role", got)
	}

	sm := r.find(t, "ServiceMonitor", "autoscaler-tailor")
	if sm.GetNamespace() != "ops" || sm.GetLabels()["release"] != "kube-prometheus" {
		t.Errorf("ServiceMonitor in %s with labels %v", sm.GetNamespace(), sm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	want := []any{map[string]any{"port": "https-metrics", "scheme": "https", "path": "/metrics", "interval": "15s",
		"tlsConfig": map[string]any{"insecureSkipVerify": true}}}
	if !reflect.DeepEqual(endpoints, want) {
		t.Errorf("ServiceMonitor endpoints %v, want %v", endpoints, want)
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	svc := r.find(t, "Service", "autoscaler-tailor")
	for k, v := range selector {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the Service lacks (%v)", k, v, svc.GetLabels())
		}
	}
	// cert-manager writes the Secret and the caBundle, so Tailor gets no right to either.
	for _, rule := range rules(t, r) {
		if slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "mutatingwebhookconfigurations") {
			t.Errorf("with cert-manager, %s still grants %v on %v", rule.from, rule.Verbs, rule.Resources)
		}
	}
}

func hasSecretMount(pod corev1.PodSpec, c corev1.Container, secret, path string) bool {
	for _, v := range pod.Volumes {
		if v.Secret == nil || v.Secret.SecretName != secret {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name && m.MountPath == path {
				return true
			}
		}
	}
	return false
}

// webhook.certManager.enabled: auto follows what the cluster serves; the webhook can be off.
func TestWebhookModes(t *testing.T) {
	cases := []struct {
		name        string
		values      string
		apiVersions []string
		// certManager: Issuer and Certificate rendered; webhook: the webhook configuration rendered.
		certManager, webhook bool
	}{
		{"auto without cert-manager", "", nil, false, true},
		{"auto with cert-manager", "", []string{"cert-manager.io/v1"}, true, true},
		{"forced off with cert-manager", "webhook: {certManager: {enabled: false}}", []string{"cert-manager.io/v1"}, false, true},
		{"webhook off", "webhook: {enabled: false}", []string{"cert-manager.io/v1"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, release{values: required + tc.values, apiVersions: tc.apiVersions})
			if got := r.lookup("Certificate", "tailor-webhook") != nil && r.lookup("Issuer", "tailor-selfsigned") != nil; got != tc.certManager {
				t.Errorf("cert-manager objects rendered: %v, want %v", got, tc.certManager)
			}
			if got := r.lookup("MutatingWebhookConfiguration", "tailor") != nil; got != tc.webhook {
				t.Errorf("webhook configuration rendered: %v, want %v", got, tc.webhook)
			}
			c := deployment(t, r).Spec.Template.Spec.Containers[0]
			flags := 0
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--webhook-") {
					flags++
				}
			}
			if want := map[bool]int{true: 5, false: 0}[tc.webhook]; flags != want {
				t.Errorf("%d --webhook-* flags, want %d: %q", flags, want, c.Args)
			}
			if _, ok := containerPorts(c)["https-webhook"]; ok != tc.webhook {
				t.Errorf("webhook port exposed: %v, want %v", ok, tc.webhook)
			}
			if tc.webhook && !tc.certManager && !slices.Contains(c.Args, "--webhook-cert-secret=tailor-webhook-cert") {
				t.Errorf("Tailor's own certificate Secret is not passed: %q", c.Args)
			}
		})
	}
}

// Values the chart cannot install with are refused at render time, naming the value.
func TestRenderRefuses(t *testing.T) {
	cases := []struct{ name, values, message string }{
		{"no cluster name", "settings: {clusterEndpoint: https://x}", "settings.clusterName is required"},
		{"no cluster endpoint", "settings: {clusterName: prod}", "settings.clusterEndpoint is required"},
		{"unknown plugin arg", required + "  pluginArgs: {batchIdleDurration: 1s}", "settings.pluginArgs.batchIdleDurration"},
		{"cert-manager neither on, off nor auto", required + "webhook: {certManager: {enabled: maybe}}", "webhook.certManager.enabled"},
		{"existing ServiceAccount without a name", required + "serviceAccount: {create: false}", "serviceAccount.name is required"},
		{"log level by name", required + "logLevel: debug", "logLevel"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderRelease(release{values: tc.values})
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("got %v, want an error naming %q", err, tc.message)
			}
		})
	}
}

// combinations are every release the tests render; each must give objects that decode strictly
// into their Go types.
var combinations = []release{
	{label: "defaults", values: required},
	custom,
	{label: "cert-manager served", values: required, apiVersions: []string{"cert-manager.io/v1"}},
	{label: "no webhook, ServiceMonitor, dashboard", values: required + "webhook: {enabled: false}\nserviceMonitor: {enabled: true}\ndashboard: {enabled: true, namespace: monitoring}"},
	{label: "kube-system, existing ServiceAccount, no placement", name: "tailor", namespace: "kube-system", values: required + "serviceAccount: {create: false, name: existing}\naffinity: {}\ntopologySpreadConstraints: []\nresources: {}"},
}

func TestEveryCombinationDecodesStrictly(t *testing.T) {
	for _, rel := range combinations {
		r := render(t, rel)
		for _, obj := range r.objects {
			if !scheme.Scheme.Recognizes(obj.GroupVersionKind()) {
				continue // a custom resource: the apply test hands it to its CRD when there is one
			}
			typed(t, obj, nil)
		}
	}
}
