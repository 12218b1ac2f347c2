package install

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// dashboardMetric is one metric a Karpenter dashboard query reads, with the labels it uses.
type dashboardMetric struct {
	name   string
	labels []string
}

// karpenterDashboardMetrics reads testdata/karpenter-dashboards.txt, written from Karpenter's
// capacity and performance dashboards (the file names its source).
func karpenterDashboardMetrics(t *testing.T) []dashboardMetric {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "karpenter-dashboards.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dashboardMetric
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		out = append(out, dashboardMetric{name: fields[0], labels: fields[1:]})
	}
	if err := s.Err(); err != nil || len(out) == 0 {
		t.Fatalf("reading the dashboards' metrics: %v (%d read)", err, len(out))
	}
	return out
}

// TestKarpenterDashboardsServed runs a scale-up and a consolidation, and then checks that every
// metric Karpenter's two Grafana dashboards query is gathered from the registry the scheduler's
// /metrics serves, with samples, and with each label the queries use set on one series at least
// (an empty label is no label to Prometheus: label_values and by() would find nothing).
func TestKarpenterDashboardsServed(t *testing.T) {
	want := karpenterDashboardMetrics(t)
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.ConsolidatingPool("default")
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-size", Operator: "In", Values: []string{"large"}})
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4000Gi")}
	e.CreateNodePool(np)
	// A DaemonSet, so the nodes have daemon requests as well as pod requests.
	if _, err := e.Cluster.Kube.AppsV1().DaemonSets("default").Create(e.Ctx, agentDaemonSet(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := env.DeploymentOf("web", 8, "600m", "256Mi")
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitRunning("app=web", 8, 3*time.Minute)
	e.Scale(web, 1)
	// Samples come as things happen (a node terminated, a consolidation decided), so the check
	// is polled until every metric is there, and the last miss is what a failure reports.
	e.WaitFor("every metric Karpenter's dashboards query, with samples and labels", 4*time.Minute, func() (bool, string) {
		missing := missingDashboardMetrics(t, append(want, karpenterReferenceMetrics...))
		return len(missing) == 0, strings.Join(missing, "; ")
	})
}

// karpenterReferenceMetrics are more of Karpenter's metrics (its metrics reference) that a scale-up
// and a consolidation give samples to, beyond those its dashboards read, with their labels.
var karpenterReferenceMetrics = []dashboardMetric{
	{"karpenter_nodeclaims_created_total", []string{"reason", "nodepool", "min_values_relaxed"}},
	{"karpenter_nodeclaims_terminated_total", []string{"nodepool", "capacity_type", "zone"}},
	{"karpenter_nodeclaims_termination_duration_seconds_count", []string{"nodepool"}},
	{"karpenter_nodeclaims_disrupted_total", []string{"reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode"}},
	{"karpenter_nodes_created_total", []string{"nodepool", "zone"}},
	{"karpenter_nodes_lifetime_duration_seconds_bucket", []string{"nodepool", "le"}},
	{"karpenter_nodes_drained_total", []string{"nodepool"}},
	{"karpenter_nodes_current_lifetime_seconds", []string{"node_name", "nodepool"}},
	{"karpenter_nodes_system_overhead", []string{"node_name", "resource_type"}},
	{"karpenter_pods_bound_duration_seconds_count", nil},
	{"karpenter_cluster_utilization_percent", []string{"resource_type"}},
	{"karpenter_voluntary_disruption_decisions_by_nodepool_total", []string{"nodepool", "decision", "reason", "consolidation_type"}},
	{"karpenter_nodepools_allowed_disruptions", []string{"nodepool", "reason"}},
	{"operator_nodeclaim_status_condition_transitions_total", []string{"type", "status", "reason", "karpenter_sh_nodepool"}},
	{"operator_nodeclaim_status_condition_transition_seconds_count", []string{"type", "status", "karpenter_sh_nodepool"}},
	{"operator_nodeclaim_status_condition_count", []string{"name", "type", "status", "reason"}},
	{"operator_nodeclaim_termination_duration_seconds_count", []string{"karpenter_sh_nodepool"}},
	{"karpenter_cloudprovider_duration_seconds_count", []string{"controller", "method", "provider"}},
}

// missingDashboardMetrics says which of want the scheduler's registry does not serve: no family
// of that name, no samples, or no series with every label set. NAME_bucket and NAME_count read the
// histogram or summary NAME, whose le and quantile labels are its type's.
func missingDashboardMetrics(t *testing.T, want []dashboardMetric) []string {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gathering the scheduler's registry: %v", err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	var missing []string
	for _, w := range want {
		f := byName[w.name]
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(w.name, suffix); f == nil && ok {
				if b := byName[base]; b != nil && (b.GetType() == dto.MetricType_HISTOGRAM || b.GetType() == dto.MetricType_SUMMARY) {
					f = b
				}
			}
		}
		if f == nil {
			missing = append(missing, w.name+": not served")
			continue
		}
		if why := servesWith(f, w.labels); why != "" {
			missing = append(missing, w.name+": "+why)
		}
	}
	sort.Strings(missing)
	return missing
}

// servesWith says what f lacks: a sample (a counter above zero, a histogram or summary with an
// observation, a gauge at all) whose series sets every label.
func servesWith(f *dto.MetricFamily, labels []string) string {
	var named []string
	for _, l := range labels {
		if (l == "le" && f.GetType() == dto.MetricType_HISTOGRAM) || (l == "quantile" && f.GetType() == dto.MetricType_SUMMARY) {
			continue
		}
		named = append(named, l)
	}
	samples := 0
	for _, m := range f.GetMetric() {
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			if m.GetCounter().GetValue() <= 0 {
				continue
			}
		case dto.MetricType_HISTOGRAM:
			if m.GetHistogram().GetSampleCount() == 0 {
				continue
			}
		case dto.MetricType_SUMMARY:
			if m.GetSummary().GetSampleCount() == 0 {
				continue
			}
		}
		samples++
		set := map[string]bool{}
		for _, lp := range m.GetLabel() {
			set[lp.GetName()] = lp.GetValue() != ""
		}
		all := true
		for _, l := range named {
			all = all && set[l]
		}
		if all {
			return ""
		}
	}
	if samples == 0 {
		return "no samples"
	}
	return fmt.Sprintf("no series of %d sets all of %v", samples, named)
}

// agentDaemonSet is a small DaemonSet on every node, as a log or CNI agent would be.
func agentDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"app": "agent"}
	spec := env.PodSpec("50m", "64Mi")
	spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}
