package charts

import (
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"sigs.k8s.io/yaml"
)

// `helm lint`, through Helm's own lint package, finds nothing to warn about (`make chart-lint`).
func TestChartLint(t *testing.T) {
	for _, rel := range combinations {
		t.Run(rel.label, func(t *testing.T) {
			values := map[string]any{}
			if err := yaml.Unmarshal([]byte(rel.values), &values); err != nil {
				t.Fatal(err)
			}
			ns := rel.withDefaults().namespace
			linter := lint.RunAll(chartDir, values, ns)
			for _, msg := range linter.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", msg)
				} else {
					t.Logf("helm lint: %s", msg)
				}
			}
		})
	}
}
