package manifests_test

import (
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/manifests"
	"github.com/tailor-sh/tailor/pkg/sandbox"
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
