package charts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart, relative to this package.
const chartDir = "tailor"

// required are the values every install must set (README: Install).
const required = `
settings:
  clusterName: prod-east
  clusterEndpoint: https://ABCDEF.gr7.us-east-1.eks.amazonaws.com
`

// release is one `helm install`: a release name and namespace, values, and the API versions the
// cluster serves beyond Helm's defaults (what .Capabilities.APIVersions.Has answers).
type release struct {
	label           string // names the release in subtests
	name, namespace string
	values          string
	apiVersions     []string
}

func (r release) withDefaults() release {
	if r.name == "" {
		r.name = "tailor"
	}
	if r.namespace == "" {
		r.namespace = "tailor"
	}
	return r
}

// rendered is what `helm install` would send: manifests in Helm's install order.
type rendered struct {
	release  release
	objects  []*unstructured.Unstructured
	notes    string
	manifest string
}

var loadChart = sync.OnceValues(func() (*chart.Chart, error) { return loader.Load(chartDir) })

// renderRelease renders the chart as `helm install` does: values coalesced with the chart's,
// templates rendered by Helm's engine, manifests split and sorted by Helm's install order.
func renderRelease(r release) (*rendered, error) {
	r = r.withDefaults()
	chrt, err := loadChart()
	if err != nil {
		return nil, err
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(r.values), &vals); err != nil {
		return nil, fmt.Errorf("test values: %w", err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, r.apiVersions...)
	top, err := util.ToRenderValues(chrt, vals, common.ReleaseOptions{Name: r.name, Namespace: r.namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, top)
	if err != nil {
		return nil, err
	}
	out := &rendered{release: r}
	for name, content := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			out.notes = content
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("the chart has %d hooks; it should have none", len(hooks))
	}
	var all strings.Builder
	for _, m := range manifests {
		all.WriteString(m.Content + "\n---\n")
		obj := &unstructured.Unstructured{}
		if err := yaml.UnmarshalStrict([]byte(m.Content), &obj.Object); err != nil {
			return nil, fmt.Errorf("%s: not YAML: %w", m.Name, err)
		}
		if obj.Object == nil {
			continue
		}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("%s: an object without apiVersion, kind or name:\n%s", m.Name, m.Content)
		}
		out.objects = append(out.objects, obj)
	}
	out.manifest = all.String()
	return out, nil
}

func render(t *testing.T, r release) *rendered {
	t.Helper()
	out, err := renderRelease(r)
	if err != nil {
		t.Fatalf("rendering the chart with values\n%s\n: %v", r.values, err)
	}
	return out
}

// fullname is the name the chart gives most objects: the release name, with "-tailor" unless
// the release name holds it already.
func (r *rendered) fullname() string {
	if strings.Contains(r.release.name, "tailor") {
		return r.release.name
	}
	return r.release.name + "-tailor"
}

// find returns the one object of that kind and name, failing the test if there is none.
func (r *rendered) find(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	if o := r.lookup(kind, name); o != nil {
		return o
	}
	t.Fatalf("no %s %s among the rendered objects: %v", kind, name, r.kinds())
	return nil
}

func (r *rendered) lookup(kind, name string) *unstructured.Unstructured {
	for _, o := range r.objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func (r *rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (r *rendered) kinds() []string {
	set := map[string]bool{}
	for _, o := range r.objects {
		set[o.GetKind()+"/"+o.GetName()] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// strict decodes with unknown and duplicate fields as errors, so a misspelt field in a template
// fails here rather than being dropped by the API server.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// typed decodes obj strictly into the Go type of its kind, into out.
func typed(t *testing.T, obj *unstructured.Unstructured, out runtime.Object) {
	t.Helper()
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := strict.Decode(data, nil, out); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}
