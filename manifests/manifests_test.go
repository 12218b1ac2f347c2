package manifests_test

import (
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"github.com/tailor-sh/tailor/manifests"
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
	for point, set := range map[string]config.PluginSet{"preEnqueue": plugins.PreEnqueue, "preFilter": plugins.PreFilter, "filter": plugins.Filter, "postFilter": plugins.PostFilter, "preScore": plugins.PreScore, "score": plugins.Score, "reserve": plugins.Reserve} {
		found := false
		for _, p := range set.Enabled {
			found = found || p.Name == "Tailor"
		}
		if !found {
			t.Errorf("plugin Tailor is not enabled at %s", point)
		}
	}
}
