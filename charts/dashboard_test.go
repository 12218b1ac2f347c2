package charts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The dashboard is off by default; on, it is one ConfigMap with the sidecar's label, the
// annotations given, in the namespace given, holding exactly dashboards/tailor.json, which is a
// Grafana dashboard whose every panel queries something. That each query's metrics and labels
// are served on /metrics is checked against a running scheduler in cmd/tailor's sandbox test
// (TestTopAgainstTheSandbox), since the scheduler's series exist only once it has scheduled.
func TestDashboardConfigMap(t *testing.T) {
	if r := render(t, release{values: required}); len(r.ofKind("ConfigMap")) != 1 {
		t.Errorf("the default release renders %d ConfigMaps, want only tailor-config", len(r.ofKind("ConfigMap")))
	}
	r := render(t, release{values: required + `
dashboard:
  enabled: true
  namespace: monitoring
  annotations: {grafana_folder: Tailor}
`})
	cm := r.find(t, "ConfigMap", "tailor-dashboard")
	if cm.GetNamespace() != "monitoring" || cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetAnnotations()["grafana_folder"] != "Tailor" {
		t.Errorf("ConfigMap %s/%s, labels %v, annotations %v", cm.GetNamespace(), cm.GetName(), cm.GetLabels(), cm.GetAnnotations())
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "tailor.json")
	file, err := os.ReadFile(filepath.Join("tailor", "dashboards", "tailor.json"))
	if err != nil {
		t.Fatal(err)
	}
	if data+"\n" != string(file) {
		t.Fatal("the ConfigMap's tailor.json is not dashboards/tailor.json")
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("uid %q, %d panels", d.UID, len(d.Panels))
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
		}
	}
}
