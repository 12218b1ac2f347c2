package charts

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/manifests"
	"github.com/tailor-sh/tailor/pkg/plugins/tailor"
)

// tailorFlags are the container args that tailor-scheduler adds to kube-scheduler's
// (cmd/scheduler, and the webhook's); the rest must parse with kube-scheduler's own flag sets.
var tailorFlags = []string{
	"cloud", "cluster-name", "cluster-endpoint", "interruption-queue", "aws-region",
	"webhook-port", "webhook-service", "webhook-namespace", "webhook-configuration", "webhook-cert-secret", "webhook-cert-dir",
}

// For every combination, the container's args and the ConfigMap are loaded the way
// tailor-scheduler loads them: kube-scheduler's flags by its own flag sets, the file that --config
// names by its own loader, then its own validation; the Tailor plugin's args by the plugin's
// decoder, which defaults and validates them.
func TestSchedulerLoadsTheRenderedConfiguration(t *testing.T) {
	keepFeatureGates(t)
	for _, rel := range combinations {
		r := render(t, rel)
		t.Run(r.release.label, func(t *testing.T) {
			dep := deployment(t, r)
			c := dep.Spec.Template.Spec.Containers[0]
			opts := options.NewOptions()
			fs := pflag.NewFlagSet("tailor-scheduler", pflag.ContinueOnError)
			for _, set := range opts.Flags.FlagSets {
				fs.AddFlagSet(set)
			}
			var kubeArgs []string
			for _, arg := range c.Args {
				name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
				if !slices.Contains(tailorFlags, name) {
					kubeArgs = append(kubeArgs, arg)
				}
			}
			if err := fs.Parse(kubeArgs); err != nil {
				t.Fatalf("kube-scheduler refuses the args %q: %v", kubeArgs, err)
			}
			if err := opts.ComponentGlobalsRegistry.Set(); err != nil { // as cmd/scheduler does after parsing
				t.Fatal(err)
			}
			if want := []string{"/healthz", "/readyz", "/livez", "/metrics"}; !slices.Equal(opts.Authorization.AlwaysAllowPaths, want) {
				t.Errorf("always-allowed paths %v, want %v: probes and Prometheus carry no credentials", opts.Authorization.AlwaysAllowPaths, want)
			}

			// --config names the key of the ConfigMap mounted at its folder.
			data := mountedConfig(t, r, dep.Spec.Template.Spec, c, opts.ConfigFile)
			file := filepath.Join(t.TempDir(), "scheduler-config.yaml")
			if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := options.LoadConfigFromFile(klog.Background(), file)
			if err != nil {
				t.Fatalf("kube-scheduler cannot load the configuration: %v\n%s", err, data)
			}
			opts.ApplyLeaderElectionTo(cfg)
			if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
				t.Fatalf("kube-scheduler refuses the configuration: %v", err)
			}
			opts.ComponentConfig = cfg
			if errs := opts.Validate(); len(errs) > 0 {
				t.Fatalf("kube-scheduler's options do not validate: %v", errs)
			}
			le := cfg.LeaderElection
			if !le.LeaderElect || le.ResourceLock != "leases" || le.ResourceName != r.fullname() || le.ResourceNamespace != r.release.namespace {
				t.Errorf("leader election %+v, want the Lease %s/%s", le, r.release.namespace, r.fullname())
			}
			if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "tailor" {
				t.Fatalf("profiles %+v, want one named tailor", cfg.Profiles)
			}
			args := tailorArgs(t, cfg.Profiles[0])
			if _, err := tailor.DecodeArgs(args); err != nil {
				t.Fatalf("the Tailor plugin refuses its args: %v", err)
			}
			// The plugin's decoder ignores unknown fields; a strict decode catches a misspelled one.
			dec := json.NewDecoder(bytes.NewReader(args.Raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&tailor.Args{}); err != nil {
				t.Errorf("the Tailor plugin's args hold a field it does not know: %v", err)
			}
		})
	}
}

// mountedConfig returns the ConfigMap data that the pod sees at path.
func mountedConfig(t *testing.T, r *rendered, pod corev1.PodSpec, c corev1.Container, file string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != path.Dir(file) {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm := r.find(t, "ConfigMap", v.ConfigMap.Name)
			data, ok := cm.Object["data"].(map[string]any)[path.Base(file)].(string)
			if !ok {
				t.Fatalf("ConfigMap %s has no key %s", v.ConfigMap.Name, path.Base(file))
			}
			return data
		}
	}
	t.Fatalf("no ConfigMap is mounted where --config=%s reads", file)
	return ""
}

func tailorArgs(t *testing.T, p config.KubeSchedulerProfile) *runtime.Unknown {
	t.Helper()
	for _, pc := range p.PluginConfig {
		if pc.Name == tailor.Name {
			u, ok := pc.Args.(*runtime.Unknown)
			if !ok {
				t.Fatalf("Tailor's args decoded to %T", pc.Args)
			}
			return u
		}
	}
	t.Fatal("the profile has no pluginConfig for Tailor")
	return nil
}

// With default values the chart's profile is manifests/scheduler-config.yaml's, which the
// sandbox and the e2e tests run with: what users install is what the tests exercise.
func TestChartProfileIsTheShippedOne(t *testing.T) {
	r := render(t, release{values: required})
	var chartCfg, shipped map[string]any
	if err := yaml.Unmarshal([]byte(r.find(t, "ConfigMap", "tailor-config").Object["data"].(map[string]any)["scheduler-config.yaml"].(string)), &chartCfg); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(manifests.SchedulerConfig, &shipped); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(chartCfg["profiles"], shipped["profiles"]) {
		t.Fatalf("the chart's profiles differ from manifests/scheduler-config.yaml's:\n%v\nvs\n%v", chartCfg["profiles"], shipped["profiles"])
	}
	// The API client's limits too (sized for storms of drains), so the two installs agree.
	if !reflect.DeepEqual(chartCfg["clientConnection"], shipped["clientConnection"]) || shipped["clientConnection"] == nil {
		t.Fatalf("the chart's clientConnection %v differs from manifests/scheduler-config.yaml's %v", chartCfg["clientConnection"], shipped["clientConnection"])
	}
}

// settings.pluginArgs lists every arg of the plugin, at the plugin's own default.
func TestPluginArgsDefaultsAreThePlugins(t *testing.T) {
	chrt, err := Chart()
	if err != nil {
		t.Fatal(err)
	}
	values := chrt.Values["settings"].(map[string]any)["pluginArgs"].(map[string]any)
	var fields []string
	typ := reflect.TypeFor[tailor.Args]()
	for i := range typ.NumField() {
		if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" {
			fields = append(fields, name)
		}
	}
	if got := slices.Sorted(maps.Keys(values)); !slices.Equal(got, slices.Sorted(slices.Values(fields))) {
		t.Fatalf("settings.pluginArgs has %v, the plugin's args are %v", got, fields)
	}
	raw, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	decoded := &tailor.Args{}
	if err := json.Unmarshal(raw, decoded); err != nil {
		t.Fatal(err)
	}
	defaults := &tailor.Args{}
	tailor.SetDefaults(defaults)
	if !reflect.DeepEqual(decoded, defaults) {
		t.Fatalf("the chart's plugin args %+v are not the plugin's defaults %+v", decoded, defaults)
	}
}
