package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/tailor-sh/tailor/pkg/metrics"
)

// dashboardFile is the Grafana dashboard the chart ships.
var dashboardFile = filepath.Join("..", "..", "charts", "tailor", "dashboards", "tailor.json")

var (
	metricName  = regexp.MustCompile(`\b(?:tailor|scheduler)_[a-z0-9_]+\b`)
	groupingBy  = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matchers    = regexp.MustCompile(`\{([^}]*)\}`)
	matcherName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	descLabels  = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
)

// query is one panel target: the metrics it reads and every label it names (grouping, matchers,
// legend).
type query struct {
	panel, expr string
	metrics     []string
	labels      []string
}

func dashboardQueries(t *testing.T) []query {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr, LegendFormat string
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			q := query{panel: p.Title, expr: tg.Expr, metrics: metricName.FindAllString(tg.Expr, -1)}
			for _, m := range groupingBy.FindAllStringSubmatch(tg.Expr, -1) {
				for _, l := range strings.Split(m[1], ",") {
					q.labels = append(q.labels, strings.TrimSpace(l))
				}
			}
			for _, m := range matchers.FindAllStringSubmatch(tg.Expr, -1) {
				for _, l := range matcherName.FindAllStringSubmatch(m[1], -1) {
					q.labels = append(q.labels, l[1])
				}
			}
			for _, l := range legendLabel.FindAllStringSubmatch(tg.LegendFormat, -1) {
				q.labels = append(q.labels, l[1])
			}
			out = append(out, q)
		}
	}
	return out
}

// servedFamilies is what kube-scheduler's /metrics serves from its registry in this process, each
// metric with its label names: every series gathered, and, for Tailor's own metrics, the label
// names their descriptors declare, since a Vec nothing has observed yet has no series (a
// disruption decision, say). Each of Tailor's collectors must be in the registry: registering
// it again must be refused as a duplicate.
func servedFamilies(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	add := func(name string, labels ...string) {
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, l := range labels {
			out[name][l] = true
		}
	}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gathering the scheduler's registry: %v", err)
	}
	for _, f := range families {
		add(f.GetName())
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				add(f.GetName(), lp.GetName())
			}
		}
	}
	for _, c := range metrics.Collectors() {
		var already prometheus.AlreadyRegisteredError
		if err := legacyregistry.Registerer().Register(c); !errors.As(err, &already) {
			t.Errorf("a metric of pkg/metrics is not in the scheduler's registry (Register: %v)", err)
			if err == nil {
				legacyregistry.Registerer().Unregister(c)
			}
		}
		ch := make(chan *prometheus.Desc, 4)
		go func() { c.Describe(ch); close(ch) }()
		for desc := range ch {
			m := descLabels.FindStringSubmatch(desc.String())
			if m == nil {
				t.Fatalf("cannot read descriptor %s", desc)
			}
			var labels []string
			for _, l := range strings.Split(m[2], ",") {
				if l = strings.TrimSpace(l); l != "" {
					labels = append(labels, l)
				}
			}
			add(m[1], labels...)
		}
	}
	return out
}

// checkDashboardServed fails for every dashboard query naming a metric /metrics does not serve,
// or a label that metric does not carry. Histograms are served as NAME_bucket (with le), _sum and
// _count of the family NAME.
func checkDashboardServed(t *testing.T) {
	t.Helper()
	served := servedFamilies(t)
	queries := dashboardQueries(t)
	if len(queries) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, q := range queries {
		if len(q.metrics) == 0 {
			t.Errorf("panel %q: %q reads no Tailor or scheduler metric", q.panel, q.expr)
		}
		for _, name := range q.metrics {
			family, labels := name, served[name]
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if labels == nil && strings.HasSuffix(name, suffix) {
					family = strings.TrimSuffix(name, suffix)
					labels = served[family]
				}
			}
			if labels == nil {
				t.Errorf("panel %q: %s is not served on /metrics", q.panel, name)
				continue
			}
			for _, l := range q.labels {
				if l == "le" && strings.HasSuffix(name, "_bucket") {
					continue
				}
				if !labels[l] {
					t.Errorf("panel %q: %s has no label %q (it has %v)", q.panel, family, l, keys(labels))
				}
			}
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
