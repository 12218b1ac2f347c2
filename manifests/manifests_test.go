package manifests_test

import (
	"os"
	"reflect"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/manifests"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/webhook"
)

// The shipped scheduler configuration decodes and validates as kube-scheduler would load it, and
// has the tailor profile with the plugin at PostFilter, Score and Reserve.
func TestSchedulerConfigIsValid(t *testing.T) {
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(manifests.SchedulerConfig, nil, nil)
	if err != nil {
		t.Fatalf("decoding scheduler-config.yaml: %v", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("scheduler-config.yaml decoded to %T", obj)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("scheduler-config.yaml is invalid: %v", err)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "tailor" {
		t.Fatalf("want one profile named tailor, got %+v", cfg.Profiles)
	}
	plugins := cfg.Profiles[0].Plugins
	for point, set := range map[string]config.PluginSet{"postFilter": plugins.PostFilter, "score": plugins.Score, "reserve": plugins.Reserve} {
		found := false
		for _, p := range set.Enabled {
			found = found || p.Name == "Tailor"
		}
		if !found {
			t.Errorf("plugin Tailor is not enabled at %s", point)
		}
	}
}

// The ConfigMap in deploy/deployment.yaml carries the same configuration as scheduler-config.yaml.
func TestDeployedConfigMatchesSchedulerConfig(t *testing.T) {
	objs, err := sandbox.ReadObjects([]string{"deploy/deployment.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var data string
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			data, _, _ = unstructured.NestedString(o.Object, "data", "scheduler-config.yaml")
		}
	}
	if data == "" {
		t.Fatal("deploy/deployment.yaml has no ConfigMap with scheduler-config.yaml")
	}
	var deployed, shipped map[string]any
	if err := yaml.Unmarshal([]byte(data), &deployed); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(manifests.SchedulerConfig, &shipped); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(deployed, shipped) {
		t.Fatalf("the ConfigMap differs from scheduler-config.yaml:\n%v\nvs\n%v", deployed, shipped)
	}
}

// Every deploy manifest parses.
func TestDeployManifestsParse(t *testing.T) {
	entries, err := os.ReadDir("deploy")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := sandbox.ReadObjects([]string{"deploy/" + e.Name()}); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
}

// webhook.yaml's configuration calls what deployment.yaml serves: the Service, the path, the
// webhook port, the Secret mode with its default names; pods of labelled namespaces only, and
// failing open.
func TestWebhookManifestsAgree(t *testing.T) {
	objs, err := sandbox.ReadObjects([]string{"deploy/webhook.yaml", "deploy/deployment.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	var svc corev1.Service
	var deploy appsv1.Deployment
	for _, o := range objs {
		var into any
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			into = &mwc
		case "Service":
			into = &svc
		case "Deployment":
			into = &deploy
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
			t.Fatal(err)
		}
	}
	if mwc.Name != webhook.DefaultConfiguration || len(mwc.Webhooks) != 1 {
		t.Fatalf("MutatingWebhookConfiguration %q with %d webhooks; want %q with one", mwc.Name, len(mwc.Webhooks), webhook.DefaultConfiguration)
	}
	w := mwc.Webhooks[0]
	ref := w.ClientConfig.Service
	if ref == nil || ref.Name != webhook.DefaultService || ref.Namespace != svc.Namespace || ref.Name != svc.Name || ptr.Deref(ref.Path, "") != webhook.Path {
		t.Errorf("the webhook calls %+v; want Service %s/%s at %s", ref, svc.Namespace, svc.Name, webhook.Path)
	}
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Ignore || w.NamespaceSelector == nil ||
		w.NamespaceSelector.MatchLabels["scheduling.tailor.sh/enabled"] != "true" || len(w.ClientConfig.CABundle) != 0 {
		t.Errorf("webhook %+v: want failurePolicy Ignore, the scheduling.tailor.sh/enabled=true namespace selector and no caBundle", w)
	}
	if svc.Spec.Ports[0].TargetPort.String() != "webhook" {
		t.Errorf("the Service targets port %s; want the container port named webhook", svc.Spec.Ports[0].TargetPort.String())
	}
	c := deploy.Spec.Template.Spec.Containers[0]
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == "webhook" && p.ContainerPort == webhook.DefaultPort
	}) {
		t.Errorf("the container has no port webhook = %d: %+v", webhook.DefaultPort, c.Ports)
	}
	if !slices.Contains(c.Args, "--webhook-cert-secret=tailor-webhook-cert") ||
		!slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil }) {
		t.Errorf("the container does not run the webhook with --webhook-cert-secret in its own namespace: args %v", c.Args)
	}
	if svc.Namespace != deploy.Namespace {
		t.Errorf("the Service is in %s, Tailor in %s", svc.Namespace, deploy.Namespace)
	}
}
